#include "idempay/receipts/log.hpp"

#include <pthread.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/log_gate.hpp"
#include "idempay/base/private_files.hpp"
#include "idempay/domain/audit.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/signing/jose.hpp"

namespace idempay::receipts {

using domain::Space;
using translog::Hash;

namespace {

// Queued heads appended per atomic batch: each is one group on the store's committer, which the
// creates' groups wait behind (1,000 took the creates' p99 from 10 to 35 ms).
constexpr size_t kBatch = 256;
// The queue is read on from a little before the newest entry taken (an entry stamped earlier
// may commit a little later), and from its start every so often (one that took longer still).
constexpr int64_t kQueueLagMs = 10'000;
constexpr auto kWholeQueueEvery = std::chrono::seconds(60);
// Tree heads older than an hour are thinned to the first of each hour (prune_tree_heads).
constexpr int64_t kHourMs = 3'600'000;
constexpr std::string_view kRightEdge = "h";
constexpr std::string_view kNewestHead = "s";
constexpr std::string_view kNewestPublished = "q";

std::string hex16(uint64_t n) {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(n));
  return out;
}

int level_of(uint64_t size) {
  int level = 0;
  while ((uint64_t{1} << level) < size) {
    ++level;
  }
  return level;
}


std::string tree_head_key(uint64_t size) { return "t/" + hex16(size); }
std::string index_key(const Hash& leaf) { return "x/" + crypto::to_hex(leaf); }
std::string raw(const Hash& h) { return std::string(reinterpret_cast<const char*>(h.data()), h.size()); }

Result<Hash> hash_from_raw(std::string_view bytes) {
  Hash h{};
  if (bytes.size() < h.size()) {
    return make_error(ErrorCode::kInternal, "a stored log node is too short");
  }
  std::copy(bytes.begin(), bytes.begin() + h.size(), h.begin());
  return h;
}

Result<Hash> hash_from_hex(std::string_view hex) {
  Hash h{};
  if (!crypto::digest_from_hex(hex, h)) {
    return make_error(ErrorCode::kInvalidArgument, "not a SHA-256 in hex");
  }
  return h;
}

Result<uint64_t> number(std::string_view text) {
  uint64_t n = 0;
  if (text.empty() || text.size() > 19) {
    return make_error(ErrorCode::kInternal, "a stored log number is malformed");
  }
  for (char c : text) {
    if (c < '0' || c > '9') {
      return make_error(ErrorCode::kInternal, "a stored log number is malformed");
    }
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

std::string encode_edge(const translog::Frontier& f) {
  JsonWriter w;
  w.begin_object().key("size").number(static_cast<int64_t>(f.size())).key("frontier").begin_array();
  for (const auto& s : f.subtrees()) {
    w.begin_object()
        .key("begin").number(static_cast<int64_t>(s.begin))
        .key("size").number(static_cast<int64_t>(s.size))
        .key("hash").string(crypto::to_hex(s.hash))
        .end_object();
  }
  w.end_array().end_object();
  return std::move(w).take();
}

Result<translog::Frontier> decode_edge(std::string_view json) {
  auto v = JsonValue::parse(json);
  const JsonValue* list = v ? v->find("frontier") : nullptr;
  if (!list) {
    return make_error(ErrorCode::kInternal, "the log's right edge is unreadable");
  }
  std::vector<translog::Subtree> subtrees;
  for (const auto& item : list->items()) {
    auto h = hash_from_hex(item.string_or("hash"));
    if (!h) {
      return make_error(ErrorCode::kInternal, "the log's right edge is unreadable");
    }
    subtrees.push_back({static_cast<uint64_t>(item.int_or("begin")), static_cast<uint64_t>(item.int_or("size")), *h});
  }
  auto f = translog::Frontier::from(std::move(subtrees));
  if (!f || static_cast<int64_t>(f->size()) != v->int_or("size")) {
    return make_error(ErrorCode::kInternal, "the log's right edge is not a tree's");
  }
  return f;
}

}  // namespace

std::string log_node_key(uint64_t begin, uint64_t size) {
  char level[3];
  std::snprintf(level, sizeof level, "%02d", level_of(size));
  return "n/" + std::string(level) + "/" + hex16(begin / size);
}

Result<std::string> log_leaf(const std::string& payment_id, uint64_t seq, const std::string& head_hex) {
  Hash head{};
  if (!crypto::digest_from_hex(head_hex, head) || payment_id.size() > 0xffff) {
    return make_error(ErrorCode::kInvalidArgument, "not a chain head a leaf can hold");
  }
  std::string leaf;
  leaf.reserve(1 + 2 + payment_id.size() + 8 + 32);
  leaf += '\x01';
  leaf += static_cast<char>(payment_id.size() >> 8);
  leaf += static_cast<char>(payment_id.size() & 0xff);
  leaf += payment_id;
  for (int shift = 56; shift >= 0; shift -= 8) {
    leaf += static_cast<char>((seq >> shift) & 0xff);
  }
  leaf += raw(head);
  return leaf;
}

std::string TreeHead::payload() const {
  JsonWriter w;
  w.begin_object()
      .key("log").string("idempay")
      .key("size").number(static_cast<int64_t>(size))
      .key("root").string(crypto::to_hex(root))
      .key("timestamp").number(timestamp)
      .end_object();
  return std::move(w).take();
}

std::string encode(const TreeHead& head) {
  JsonWriter w;
  w.begin_object()
      .key("size").number(static_cast<int64_t>(head.size))
      .key("root").string(crypto::to_hex(head.root))
      .key("timestamp").number(head.timestamp)
      .key("signatures").begin_array();
  for (const auto& s : head.signatures) {
    w.string(s);
  }
  w.end_array().end_object();
  return std::move(w).take();
}

Result<TreeHead> decode_tree_head(std::string_view json) {
  auto v = JsonValue::parse(json);
  auto root = v ? hash_from_hex(v->string_or("root")) : Result<Hash>(tl::unexpected(Error{}));
  const JsonValue* signatures = v ? v->find("signatures") : nullptr;
  if (!root || !signatures || v->int_or("size", -1) < 0) {
    return make_error(ErrorCode::kInternal, "a tree head is unreadable");
  }
  TreeHead head;
  head.size = static_cast<uint64_t>(v->int_or("size"));
  head.root = *root;
  head.timestamp = v->int_or("timestamp");
  for (const auto& s : signatures->items()) {
    head.signatures.push_back(s.text());
  }
  return head;
}

// -- reading ------------------------------------------------------------------------------------

// The hash of a complete subtree too small to be stored, from its leaves' stored hashes.
Result<Hash> LogReader::hash_of_leaves(uint64_t begin, uint64_t size) const {
  std::string after = begin == 0 ? "n/00/" : log_node_key(begin - 1, 1);
  auto rows = store_.scan_after(Space::kLog, after, size);
  if (!rows) {
    return tl::unexpected(rows.error());
  }
  std::vector<Hash> level;
  for (const auto& [key, stored] : *rows) {
    if (key != log_node_key(begin + level.size(), 1)) {
      break;
    }
    auto hash = hash_from_raw(stored.value);
    if (!hash) {
      return tl::unexpected(hash.error());
    }
    level.push_back(*hash);
  }
  if (level.size() != size) {
    return make_error(ErrorCode::kInternal, "the log lacks leaf " + std::to_string(begin + level.size()));
  }
  for (; level.size() > 1; level.resize(level.size() / 2)) {
    for (size_t i = 0; i < level.size() / 2; ++i) {
      level[i] = translog::node_hash(level[2 * i], level[2 * i + 1]);
    }
  }
  return level.front();
}

translog::StoredSubtree LogReader::subtrees() const {
  return [this](uint64_t begin, uint64_t size) -> Result<Hash> {
    if (size > 1 && size < kStoredSubtreeLeaves) {
      return hash_of_leaves(begin, size);
    }
    auto got = store_.get(Space::kLog, log_node_key(begin, size));
    if (!got) {
      return tl::unexpected(got.error());
    }
    if (!*got) {
      return make_error(ErrorCode::kInternal, "the log lacks the node of leaves " + std::to_string(begin) + "+" +
                                                  std::to_string(size));
    }
    return hash_from_raw((*got)->value);
  };
}

Result<std::optional<TreeHead>> LogReader::newest() const {
  auto s = store_.get(Space::kLog, kNewestPublished);
  if (!s) {
    return tl::unexpected(s.error());
  }
  if (!*s) {
    return std::optional<TreeHead>();
  }
  auto size = number((*s)->value);
  if (!size) {
    return tl::unexpected(size.error());
  }
  auto head = at(*size);
  if (!head) {
    return tl::unexpected(head.error());
  }
  return std::optional<TreeHead>(std::move(*head));
}

Result<TreeHead> LogReader::at(uint64_t size) const {
  auto got = store_.get(Space::kLog, tree_head_key(size));
  if (!got) {
    return tl::unexpected(got.error());
  }
  if (!*got) {
    return make_error(ErrorCode::kNotFound, "no tree head of that size");
  }
  return decode_tree_head((*got)->value);
}

Result<uint64_t> LogReader::index_of(const Hash& leaf) const {
  auto got = store_.get(Space::kLog, index_key(leaf));
  if (!got) {
    return tl::unexpected(got.error());
  }
  if (!*got) {
    return make_error(ErrorCode::kNotFound, "no such leaf in the log (yet)");
  }
  return number((*got)->value);
}

Result<std::vector<Hash>> LogReader::inclusion_proof(uint64_t index, uint64_t size) const {
  return translog::inclusion_proof(index, size, subtrees());
}

Result<std::vector<Hash>> LogReader::consistency_proof(uint64_t old_size, uint64_t size) const {
  return translog::consistency_proof(old_size, size, subtrees());
}

Result<Hash> LogReader::root(uint64_t size) const { return translog::root(size, subtrees()); }

Result<std::string> LogReader::leaf(uint64_t index) const {
  auto got = store_.get(Space::kLog, log_node_key(index, 1));
  if (!got) {
    return tl::unexpected(got.error());
  }
  if (!*got || (*got)->value.size() < 32) {
    return make_error(ErrorCode::kNotFound, "no such leaf");
  }
  return (*got)->value.substr(32);
}

Result<uint64_t> LogReader::size() const {
  auto edge = store_.get(Space::kLog, kRightEdge);
  if (!edge) {
    return tl::unexpected(edge.error());
  }
  if (!*edge) {
    return uint64_t{0};
  }
  auto f = decode_edge((*edge)->value);
  if (!f) {
    return tl::unexpected(f.error());
  }
  return f->size();
}

// -- the sequencer and the witness ---------------------------------------------------------------

struct TransparencyLog::Impl {
  storage::Store& store;
  std::shared_ptr<const KeyRing> keys;
  LogOptions options;
  LogReader reader{store};

  std::mutex mutex;  // health_, witnessed_ and the thread's stop flag
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
  LogHealth health;
  TreeHead witnessed;  // the newest this instance signed (size 0: none)
  std::mutex round_mutex;  // one round at a time (the thread's, or one asked for)
  std::string resume_after;  // rounds only: where the queue is read on from
  std::string prune_after = "t/";  // rounds only: the last tree head kept by the thinning
  int64_t kept_hour = -1;
  std::chrono::steady_clock::time_point whole_queue_read;
  LogGate failure_lines{std::chrono::seconds(10)};

  Impl(storage::Store& s, std::shared_ptr<const KeyRing> k, LogOptions o)
      : store(s), keys(std::move(k)), options(std::move(o)) {}

  // Appends every queued head, kBatch per atomic batch.
  Status append_queued() {
    for (;;) {
      auto edge = store.get(Space::kLog, kRightEdge);
      if (!edge) {
        return tl::unexpected(edge.error());
      }
      translog::Frontier frontier;
      if (*edge) {
        auto decoded = decode_edge((*edge)->value);
        if (!decoded) {
          return tl::unexpected(decoded.error());
        }
        frontier = std::move(*decoded);
      }
      auto queued = read_queue();
      if (!queued) {
        return tl::unexpected(queued.error());
      }
      if (queued->empty()) {
        return {};
      }
      storage::Batch batch;
      std::vector<translog::Subtree> completed;
      // The recovery index's changes the entries carry ride in the same batch (a payment that
      // entered and left it within the round costs the index nothing).
      domain::RecoveryLetters letters;
      for (const auto& [key, value] : *queued) {
        batch.push_back({Space::kLog, key, std::nullopt, std::nullopt, true});
        auto at = domain::parse_log_pending_key(key);
        auto head = domain::decode_queued_head(value.value);
        auto leaf = !at ? Result<std::string>(tl::unexpected(at.error()))
                   : !head ? Result<std::string>(tl::unexpected(head.error()))
                           : log_leaf(at->first, at->second, head->hash);
        if (!leaf) {
          spdlog::error("log: queued entry {} dropped: {}", key, leaf.error().message);
          continue;
        }
        letters.add(at->first, at->second, head->recovery);
        Hash hash = translog::leaf_hash(*leaf);
        uint64_t index = frontier.size();
        frontier.append(hash, completed);
        // Blind: the right edge's compare-and-swap below already proves no committed batch
        // wrote these indices (every one that did moved the edge), at no read per key.
        batch.push_back({Space::kLog, log_node_key(index, 1), raw(hash) + *leaf, std::nullopt, true});
        batch.push_back({Space::kLog, index_key(hash), std::to_string(index), std::nullopt, true});
      }
      for (const auto& s : completed) {
        if (s.size >= kStoredSubtreeLeaves) {
          batch.push_back({Space::kLog, log_node_key(s.begin, s.size), raw(s.hash), std::nullopt, true});
        }
      }
      letters.carry_over(batch);
      batch.push_back({Space::kLog, std::string(kRightEdge), encode_edge(frontier), *edge ? (*edge)->etag : 0});
      auto committed = store.commit_and_wait(std::move(batch));
      if (!committed) {
        // Another instance's sequencer appended first: its round took these, or the next one will.
        return committed.error().code == ErrorCode::kConflict ? Status{} : tl::unexpected(committed.error());
      }
      resume_after = queued->back().first;  // the rest of this round: on after the last taken
      if (queued->size() < kBatch) {
        auto newest = entry_time(queued->back().first);
        resume_after = domain::log_pending_from(newest - kQueueLagMs);
        return {};
      }
    }
  }

  // The queue's next entries: from its start at the first round and every kWholeQueueEvery,
  // else from `resume_after`, over the deletions of only the last few seconds' entries.
  Result<std::vector<std::pair<std::string, storage::Versioned>>> read_queue() {
    auto now = std::chrono::steady_clock::now();
    if (resume_after.empty() || now - whole_queue_read >= kWholeQueueEvery) {
      resume_after = std::string(domain::kLogPendingPrefix);
      whole_queue_read = now;
    }
    auto rows = store.scan_after(Space::kLog, resume_after, kBatch);
    if (!rows) {
      return rows;
    }
    auto past = std::find_if(rows->begin(), rows->end(), [](const auto& row) {
      return row.first.compare(0, domain::kLogPendingPrefix.size(), domain::kLogPendingPrefix) != 0;
    });
    rows->erase(past, rows->end());
    return rows;
  }

  static int64_t entry_time(const std::string& key) {
    auto digits = number(std::string_view(key).substr(domain::kLogPendingPrefix.size(), domain::kLogPendingTimeDigits));
    return digits ? static_cast<int64_t>(*digits) : 0;
  }

  // A new tree head when the tree grew and the newest is at least an interval old.
  Status make_tree_head() {
    auto size = reader.size();
    auto newest = store.get(Space::kLog, kNewestHead);
    if (!size || !newest) {
      return tl::unexpected(!size ? size.error() : newest.error());
    }
    if (*size == 0) {
      return {};
    }
    int64_t now = domain::now_unix_ms();
    if (*newest) {
      auto last = number((*newest)->value);
      auto head = last ? reader.at(*last) : Result<TreeHead>(tl::unexpected(last.error()));
      if (!head) {
        return tl::unexpected(head.error());
      }
      if (head->size >= *size || now - head->timestamp < options.interval.count()) {
        return {};
      }
    }
    auto root = reader.root(*size);
    if (!root) {
      return tl::unexpected(root.error());
    }
    TreeHead head{*size, *root, now, {}};
    auto made = store.commit_and_wait({{Space::kLog, tree_head_key(*size), encode(head), 0},
                                       {Space::kLog, std::string(kNewestHead), std::to_string(*size),
                                        *newest ? (*newest)->etag : 0}});
    if (!made && made.error().code != ErrorCode::kConflict) {  // a conflict: another instance made one
      return tl::unexpected(made.error());
    }
    return {};
  }

  // The newest tree head, checked against what this instance signed before and signed.
  Status witness() {
    auto newest = store.get(Space::kLog, kNewestHead);
    if (!newest) {
      return tl::unexpected(newest.error());
    }
    if (!*newest) {
      return {};
    }
    auto size = number((*newest)->value);
    if (!size) {
      return tl::unexpected(size.error());
    }
    auto stored = store.get(Space::kLog, tree_head_key(*size));
    if (!stored) {
      return tl::unexpected(stored.error());
    }
    if (!*stored) {
      return make_error(ErrorCode::kInternal, "the newest tree head is missing");
    }
    auto head = decode_tree_head((*stored)->value);
    if (!head) {
      return tl::unexpected(head.error());
    }
    // Checked even when signed already: the newest head pointed back at an older one is a
    // log that lost leaves.
    if (auto problem = inconsistency(*head); !problem.empty()) {
      alarm(problem);
      return {};
    }
    auto key = keys->active();
    const std::string& kid = key->public_key().kid;
    bool signed_already = std::any_of(head->signatures.begin(), head->signatures.end(), [&](const std::string& s) {
      auto jws = signing::parse_compact(s);
      return jws && jws->kid == kid;
    });
    if (signed_already) {
      return {};
    }
    TreeHead seen{head->size, head->root, head->timestamp, {}};
    if (auto kept = keep_witnessed(seen); !kept) {
      return kept;
    }
    head->signatures.push_back(signing::sign_compact(*key, kTreeHeadType, head->payload()));
    storage::Batch batch{{Space::kLog, tree_head_key(head->size), encode(*head), (*stored)->etag}};
    if (head->signatures.size() >= options.quorum) {
      auto published = store.get(Space::kLog, kNewestPublished);
      if (!published) {
        return tl::unexpected(published.error());
      }
      auto before = *published ? number((*published)->value) : Result<uint64_t>(uint64_t{0});
      if (before && *before < head->size) {
        batch.push_back({Space::kLog, std::string(kNewestPublished), std::to_string(head->size),
                         *published ? (*published)->etag : 0});
      }
    }
    auto signed_now = store.commit_and_wait(std::move(batch));
    if (!signed_now && signed_now.error().code != ErrorCode::kConflict) {  // a conflict: again next round
      return tl::unexpected(signed_now.error());
    }
    return {};
  }

  // Empty if `head` extends what this instance signed before; else what is wrong, with the
  // sizes and roots.
  std::string inconsistency(const TreeHead& head) {
    TreeHead before;
    {
      std::lock_guard lock(mutex);
      before = witnessed;
    }
    auto named = [](const TreeHead& h) { return std::to_string(h.size) + " (root " + crypto::to_hex(h.root) + ")"; };
    if (head.size < before.size) {
      return "the log went backwards: this instance signed size " + named(before) + ", the store now shows " +
             named(head);
    }
    if (before.size == 0) {
      auto root = reader.root(head.size);
      if (!root || *root != head.root) {
        return "tree head " + named(head) + " does not match the log's own leaves";
      }
      return {};
    }
    auto proof = reader.consistency_proof(before.size, head.size);
    if (!proof || !translog::verify_consistency(before.size, head.size, before.root, head.root, *proof)) {
      return "tree head " + named(head) + " is not an extension of " + named(before) +
             ", which this instance signed: the log was rewritten";
    }
    return {};
  }

  void alarm(const std::string& problem) {
    {
      std::lock_guard lock(mutex);
      health.consistent = false;
      health.problem = problem;
    }
    if (failure_lines.open()) {
      spdlog::error("log: refusing to sign: {}", problem);
    }
  }

  Status keep_witnessed(const TreeHead& head) {
    if (!options.witness_file.empty()) {
      JsonWriter w;
      w.begin_object()
          .key("size").number(static_cast<int64_t>(head.size))
          .key("root").string(crypto::to_hex(head.root))
          .key("timestamp").number(head.timestamp)
          .end_object();
      if (auto written = write_private_file(options.witness_file, std::move(w).take() + "\n"); !written) {
        return written;
      }
    }
    std::lock_guard lock(mutex);
    witnessed = head;
    health.signed_size = head.size;
    return {};
  }

  Status load_witnessed() {
    if (options.witness_file.empty()) {
      return {};
    }
    auto text = read_text_file(options.witness_file);
    if (!text) {
      return text.error().code == ErrorCode::kNotFound ? Status{} : Status(tl::unexpected(text.error()));
    }
    auto v = JsonValue::parse(*text);
    auto root = v ? hash_from_hex(v->string_or("root")) : Result<Hash>(tl::unexpected(Error{}));
    if (!root || v->int_or("size", -1) < 0) {
      return make_error(ErrorCode::kInvalidArgument, options.witness_file + " is not a tree head this idempay wrote");
    }
    std::lock_guard lock(mutex);
    witnessed = TreeHead{static_cast<uint64_t>(v->int_or("size")), *root, v->int_or("timestamp"), {}};
    health.signed_size = witnessed.size;
    return {};
  }

  // A tree head is made every interval while the log grows: 86,400 a day. Those older than an
  // hour are thinned to the first of each hour, so that what is kept grows by 24 a day however
  // busy the log is. A verifier needs the head its proof names, the newest published; one it
  // kept itself it holds already. The newest made and the newest published are always kept.
  Status prune_tree_heads() {
    auto newest = store.get(Space::kLog, kNewestHead);
    auto published = store.get(Space::kLog, kNewestPublished);
    if (!newest || !published) {
      return tl::unexpected(!newest ? newest.error() : published.error());
    }
    std::string keep_newest = *newest ? tree_head_key(number((*newest)->value).value_or(0)) : "";
    std::string keep_published = *published ? tree_head_key(number((*published)->value).value_or(0)) : "";
    auto rows = store.scan_after(Space::kLog, prune_after, kBatch);
    if (!rows) {
      return tl::unexpected(rows.error());
    }
    int64_t old = domain::now_unix_ms() - kHourMs;
    storage::Batch thinned;
    for (const auto& [key, stored] : *rows) {
      if (key.compare(0, 2, "t/") != 0) {
        break;  // past the tree heads
      }
      auto head = decode_tree_head(stored.value);
      if (head && head->timestamp >= old) {
        break;  // at the recent ones: their sizes, and so their keys, follow their times
      }
      if (!head) {
        prune_after = key;  // unreadable: kept, for `audit verify` to name
        continue;
      }
      int64_t hour = head->timestamp / kHourMs;
      if (hour == kept_hour && key != keep_newest && key != keep_published) {
        thinned.push_back({Space::kLog, key, std::nullopt, std::nullopt, true});
      } else {
        kept_hour = hour;
      }
      prune_after = key;
    }
    if (thinned.empty()) {
      return {};
    }
    auto done = store.commit_and_wait(std::move(thinned));
    return done ? Status{} : Status(tl::unexpected(done.error()));
  }

  Status round() {
    std::lock_guard serial(round_mutex);
    for (auto step : {&Impl::append_queued, &Impl::make_tree_head, &Impl::witness, &Impl::prune_tree_heads}) {
      if (auto done = (this->*step)(); !done) {
        return done;
      }
    }
    return {};
  }

  void run() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      lock.unlock();
      if (auto done = round(); !done && failure_lines.open()) {
        spdlog::warn("log: a round failed (tried again): {}", done.error().message);
      }
      lock.lock();
      wake.wait_for(lock, options.interval, [this] { return stopping; });
    }
  }
};

TransparencyLog::TransparencyLog(storage::Store& store, std::shared_ptr<const KeyRing> keys, LogOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(keys), options)), options_(std::move(options)) {}

TransparencyLog::~TransparencyLog() { stop(); }

Status TransparencyLog::start() {
  if (auto loaded = impl_->load_witnessed(); !loaded) {
    return loaded;
  }
  impl_->thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "idempay-log");  // for top -H, perf and the harness
    impl_->run();
  });
  return {};
}

void TransparencyLog::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) {
    impl_->thread.join();
  }
}

Status TransparencyLog::round() { return impl_->round(); }

LogHealth TransparencyLog::health() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->health;
}

}  // namespace idempay::receipts
