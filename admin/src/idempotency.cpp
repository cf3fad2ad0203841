#include "idempay/admin/idempotency.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/http/problem.hpp"

namespace idempay::admin {

namespace {

using http::problem;

constexpr std::string_view kReplayedHeader = "idempotent-replayed";
constexpr auto kCollectEvery = std::chrono::minutes(1);

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What is stored under a key: the attempt running, or the answer it gave.
struct KeyRecord {
  bool done = false;
  std::string fingerprint;
  int64_t created = 0;        // Unix ms
  int64_t expires = 0;        // Unix ms: from then on the key is free and the record collected
  int64_t lease_until = 0;    // running: repeats get 409 until then
  unsigned status = 0;        // done: the answer
  std::string content_type;
  std::string retry_after;
  std::string body;
};

std::string encode(const KeyRecord& r) {
  JsonWriter w;
  w.begin_object().key("state").string(r.done ? "done" : "running").key("fingerprint").string(r.fingerprint);
  w.key("created").number(r.created).key("expires").number(r.expires).key("leaseUntil").number(r.lease_until);
  if (r.done) {
    w.key("status").number(r.status).key("contentType").string(r.content_type);
    w.key("retryAfter").string(r.retry_after).key("body").string(r.body);
  }
  w.end_object();
  return std::move(w).take();
}

Result<KeyRecord> decode(std::string_view json) {
  auto v = JsonValue::parse(json);
  if (!v || v->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kInternal, "unreadable idempotency record");
  }
  KeyRecord r;
  r.done = v->string_or("state") == "done";
  r.fingerprint = v->string_or("fingerprint");
  r.created = v->int_or("created");
  r.expires = v->int_or("expires");
  r.lease_until = v->int_or("leaseUntil");
  r.status = static_cast<unsigned>(v->int_or("status"));
  r.content_type = v->string_or("contentType");
  r.retry_after = v->string_or("retryAfter");
  r.body = v->string_or("body");
  return r;
}

// 5xx but 501 (an answer: "do it by hand"): the request may succeed when tried again.
bool is_retryable(unsigned status) { return status >= 500 && status != 501; }

http::Response replay(const KeyRecord& r) {
  http::Response answer(r.status, r.body, r.content_type);
  if (!r.retry_after.empty()) {
    answer.headers.push_back({"retry-after", r.retry_after});
  }
  answer.headers.push_back({std::string(kReplayedHeader), "true"});
  answer.log.emplace_back("idempotency", "replayed");
  return answer;
}

http::Response store_unavailable() {
  auto r = problem(503, "Service Unavailable",
                   "the idempotency store cannot be read or written; nothing was done, retry with the same key");
  r.headers.push_back({"retry-after", "1"});
  return r;
}

// One spelling per number: 1, 1.0, 1.00, 10e-1 and 0.1e1 are all "1" (the same value is the
// same request). Digits with no leading or trailing zeros times a power of ten, written
// plainly while that is short, else as <digits>e<exponent>.
std::string canonical_number(std::string_view text) {
  bool negative = !text.empty() && text.front() == '-';
  text.remove_prefix(negative ? 1 : 0);
  auto e = text.find_first_of("eE");
  std::string_view mantissa = text.substr(0, e);
  // A JSON number (JsonValue checked it); an exponent beyond a billion is clamped, which keeps
  // the arithmetic below from overflowing and says the same of numbers no amount can be.
  long exponent = e == std::string_view::npos ? 0 : std::strtol(std::string(text.substr(e + 1)).c_str(), nullptr, 10);
  exponent = std::clamp(exponent, -1'000'000'000L, 1'000'000'000L);
  std::string digits;
  for (size_t i = 0; i < mantissa.size(); ++i) {
    if (mantissa[i] == '.') {
      exponent -= static_cast<long>(mantissa.size() - i - 1);
    } else {
      digits.push_back(mantissa[i]);
    }
  }
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) {
    return "0";
  }
  while (digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  // Clamped again once the digits are settled, so that a canonical number read again is
  // itself (a clamped exponent moved by trailing zeros would otherwise move on every pass).
  exponent = std::clamp(exponent, -1'000'000'000L, 1'000'000'000L);
  std::string out = negative ? "-" : "";
  long length = static_cast<long>(digits.size());
  if (exponent >= 0 && exponent <= 20) {
    out += digits + std::string(static_cast<size_t>(exponent), '0');
  } else if (exponent < 0 && -exponent < length) {
    out += digits.substr(0, static_cast<size_t>(length + exponent)) + "." +
           digits.substr(static_cast<size_t>(length + exponent));
  } else if (exponent < 0 && -exponent - length <= 20) {
    out += "0." + std::string(static_cast<size_t>(-exponent - length), '0') + digits;
  } else {
    out += digits + "e" + std::to_string(exponent);
  }
  return out;
}

void write_canonical(const JsonValue& v, JsonWriter& w) {
  switch (v.type()) {
    case JsonValue::Type::kObject: {
      std::vector<const std::pair<std::string, JsonValue>*> members;
      for (const auto& m : v.members()) {
        members.push_back(&m);
      }
      std::sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->first < b->first; });
      w.begin_object();
      for (auto* m : members) {
        w.key(m->first);
        write_canonical(m->second, w);
      }
      w.end_object();
      break;
    }
    case JsonValue::Type::kArray:
      w.begin_array();
      for (const auto& item : v.items()) {
        write_canonical(item, w);
      }
      w.end_array();
      break;
    case JsonValue::Type::kString:
      w.string(v.text());
      break;
    case JsonValue::Type::kNumber:
      w.raw_number(canonical_number(v.text()));
      break;
    case JsonValue::Type::kBool:
      w.boolean(v.boolean());
      break;
    case JsonValue::Type::kNull:
      w.null();
      break;
  }
}

}  // namespace

bool valid_idempotency_key(std::string_view key) {
  return !key.empty() && key.size() <= 255 &&
         std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

Result<std::string> canonical_json(std::string_view body) {
  auto v = JsonValue::parse(body);
  if (!v) {
    return make_error(ErrorCode::kInvalidArgument, "the body is not JSON");
  }
  JsonWriter w;
  write_canonical(*v, w);
  return std::move(w).take();
}

std::string idempotency_record_key(std::string_view prefix, std::string_view operator_name, std::string_view method,
                                   std::string_view route, std::string_view key) {
  // Length-prefixed, so that no two scopes run into each other.
  std::string scope;
  for (std::string_view part : {operator_name, method, route, key}) {
    scope += std::to_string(part.size()) + ":" + std::string(part);
  }
  return std::string(prefix) + crypto::to_hex(crypto::sha256(scope));
}

struct IdempotencyGuard::Attempt {
  std::string key;
  std::string fingerprint;
  Route route;
  http::Responder respond;
  int64_t created = 0;
};

IdempotencyGuard::IdempotencyGuard(storage::Store& store, IdempotencyOptions options)
    : store_(store), options_(options) {}

void IdempotencyGuard::run(std::string record_key, std::string fingerprint, Route route, http::Responder respond) {
  auto a = std::make_shared<Attempt>(Attempt{std::move(record_key), std::move(fingerprint), std::move(route),
                                             std::move(respond), now_ms()});
  maybe_collect();
  store_.read_async([this, a](storage::Store& store) { decide(a, store.get(options_.keyspace, a->key)); });
}

void IdempotencyGuard::decide(const std::shared_ptr<Attempt>& a, Result<std::optional<storage::Versioned>> stored) {
  if (!stored) {
    spdlog::warn("operator API: idempotency record unreadable: {}", stored.error().message);
    return a->respond(store_unavailable());
  }
  if (!*stored) {
    return start(a, 0);
  }
  auto record = decode((*stored)->value);
  int64_t now = now_ms();
  if (!record || record->expires <= now) {
    return start(a, (*stored)->etag);  // expired (or unreadable): a new first attempt
  }
  if (record->fingerprint != a->fingerprint) {
    return a->respond(problem(422, "Unprocessable Entity",
                              "this Idempotency-Key was used with a different request body"));
  }
  if (record->done) {
    return a->respond(replay(*record));
  }
  if (record->lease_until > now) {
    auto r = problem(409, "Conflict", "a request with this Idempotency-Key is still being processed; retry later");
    r.headers.push_back({"retry-after", "1"});
    r.log.emplace_back("idempotency", "in-flight");
    return a->respond(std::move(r));
  }
  start(a, (*stored)->etag);  // the first attempt's process died: this one carries on
}

void IdempotencyGuard::start(const std::shared_ptr<Attempt>& a, std::optional<uint64_t> expected_etag) {
  KeyRecord running;
  running.fingerprint = a->fingerprint;
  running.created = a->created;
  running.expires = a->created + options_.retention.count();
  running.lease_until = a->created + options_.lease.count();
  store_.commit({{options_.keyspace, a->key, encode(running), expected_etag}}, [this, a](storage::CommitResult r) {
    if (!r) {
      if (r.error().code == ErrorCode::kConflict) {  // another request with the key got in first
        return store_.read_async([this, a](storage::Store& store) { decide(a, store.get(options_.keyspace, a->key)); });
      }
      spdlog::warn("operator API: idempotency record not written: {}", r.error().message);
      return a->respond(store_unavailable());
    }
    uint64_t etag = r->front();
    a->route([this, a, etag](http::Response answer) { finish(a, etag, std::move(answer)); });
  });
}

void IdempotencyGuard::finish(const std::shared_ptr<Attempt>& a, uint64_t running_etag, http::Response answer) {
  if (is_retryable(answer.status)) {
    // The key is not kept: the retry runs. If the delete fails, the lease ends it.
    store_.commit({{options_.keyspace, a->key, std::nullopt, running_etag}},
                  [a, answer = std::move(answer)](storage::CommitResult) mutable { a->respond(std::move(answer)); });
    return;
  }
  KeyRecord done;
  done.done = true;
  done.fingerprint = a->fingerprint;
  done.created = a->created;
  done.expires = a->created + options_.retention.count();
  done.status = answer.status;
  done.content_type = answer.content_type;
  for (const auto& h : answer.headers) {
    if (h.name == "retry-after") {
      done.retry_after = h.value;
    }
  }
  done.body = answer.body;
  store_.commit({{options_.keyspace, a->key, encode(done), running_etag}},
                [a, answer = std::move(answer)](storage::CommitResult r) mutable {
                  if (!r) {
                    // Done but not recorded: the caller retries; after the lease the route runs
                    // again and the operation's requestId makes the payment answer the same.
                    spdlog::warn("operator API: answer done but not recorded under its key: {}", r.error().message);
                    return a->respond(store_unavailable());
                  }
                  answer.log.emplace_back("idempotency", "first");
                  a->respond(std::move(answer));
                });
}

void IdempotencyGuard::maybe_collect() {
  int64_t now = now_ms();
  int64_t last = last_collect_.load();
  auto every = std::chrono::duration_cast<std::chrono::milliseconds>(kCollectEvery).count();
  if (now - last < std::min<int64_t>(every, options_.retention.count()) || !last_collect_.compare_exchange_strong(last, now)) {
    return;
  }
  store_.read_async([this](storage::Store&) {
    if (auto collected = collect_expired(); collected && *collected > 0) {
      spdlog::info("operator API: {} expired idempotency keys collected", *collected);
    }
  });
}

Result<size_t> IdempotencyGuard::collect_expired(size_t limit) {
  auto records = store_.scan(options_.keyspace, options_.prefix, limit);
  if (!records) {
    return tl::unexpected(records.error());
  }
  int64_t now = now_ms();
  storage::Batch expired;
  for (const auto& [key, versioned] : *records) {
    auto r = decode(versioned.value);
    bool over = !r || (r->expires <= now && (r->done || r->lease_until <= now));
    if (over) {
      expired.push_back({options_.keyspace, key, std::nullopt, versioned.etag});
    }
  }
  size_t count = expired.size();
  for (auto& w : expired) {  // one by one: a record renewed meanwhile keeps its place
    if (auto done = store_.commit_and_wait({std::move(w)}); !done && done.error().code != ErrorCode::kConflict) {
      return tl::unexpected(done.error());
    }
  }
  return count;
}

}  // namespace idempay::admin
