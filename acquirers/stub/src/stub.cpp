#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "idempay/acquirers/stub.hpp"
#include "idempay/acquirers/wire.hpp"
#include "idempay/http/client.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/delayer.hpp"
#include "idempay/protocol/methods.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/webhooks.hpp"
#include "idempay/acquirers/boleto.hpp"
#include "idempay/acquirers/brcode.hpp"

namespace idempay::acquirer {

namespace {

using Clock = std::chrono::steady_clock;

// Identifiers derived from the key, so the same key always gets the same ones.
std::string derived_id(std::string_view prefix, std::string_view key, size_t hex_digits) {
  auto d = crypto::sha256(std::string(prefix) + "|" + std::string(key));
  return crypto::to_hex(d).substr(0, hex_digits);
}

std::string derived_digits(std::string_view prefix, std::string_view key, size_t digits) {
  auto d = crypto::sha256(std::string(prefix) + "|" + std::string(key));
  std::string out;
  for (size_t i = 0; out.size() < digits; ++i) {
    out.push_back(static_cast<char>('0' + d[i % d.size()] % 10));
  }
  return out;
}

struct AuthEntry {
  int calls = 0;
  Authorization result;
  AuthorizationStatus final_status = AuthorizationStatus::kApproved;
  Clock::time_point resolves_at;
  Cents amount = 0;
  Cents max_value = 0;  // what may be captured when more than the amount (over-capture)
  Cents captured = 0;
  Cents refunded = 0;
  bool cancelled = false;
  int64_t reported_revision = 1;  // the first answer goes back in the authorize call itself
  // What the ledger shows of the order (no personal data).
  int64_t installments = 1;
  std::string interest_rate;
  size_t items = 0;
  std::vector<ppp::Recipient> recipients;
};

void write_split(JsonWriter& w, const std::vector<ppp::Recipient>& recipients) {
  w.begin_array();
  for (const auto& r : recipients) {
    w.begin_object().key("id").string(r.id).key("role").string(r.role);
    w.key("amount").raw_number(format_amount(r.amount)).end_object();
  }
  w.end_array();
}

struct OperationEntry {
  int calls = 0;
  OperationOutcome outcome;
  std::vector<ppp::Recipient> recipients;
  Clock::time_point completes_at;  // while outcome.pending
};

}  // namespace

struct StubAcquirer::Impl {
  StubOptions options;
  std::optional<StubWebhookOptions> webhooks;
  std::unique_ptr<http::Client> client;
  mutable std::mutex mutex;
  std::map<std::string, AuthEntry> authorizations;
  std::map<std::string, OperationEntry> operations[3];
  std::unique_ptr<Delayer> delayer;
  // Teardown: once `stopping` is set (under the mutex), no webhook is sent and no retry is
  // scheduled, so the client and the delayer can go in either order. Recursive: a send that
  // fails at once completes inline, and its completion takes the mutex again.
  std::recursive_mutex teardown_mutex;
  bool stopping = false;

  template <class T>
  void answer(Callback<T>& done, T value) {
    if (options.latency.count() == 0) {
      return done(Result<T>(std::move(value)));
    }
    delayer->after(options.latency, [done = std::move(done), v = std::move(value)]() mutable {
      done(Result<T>(std::move(v)));
    });
  }

  // Settles a pending authorization whose time has come. Caller holds the mutex.
  static void resolve(AuthEntry& e) {
    if (e.result.status == AuthorizationStatus::kPending && Clock::now() >= e.resolves_at) {
      e.result.status = e.final_status;
      ++e.result.revision;
      e.result.code = e.final_status == AuthorizationStatus::kApproved ? "0000" : "51";
      e.result.message = e.final_status == AuthorizationStatus::kApproved ? "approved" : "denied";
      if (e.final_status == AuthorizationStatus::kApproved) {
        e.result.authorization_id = derived_digits("auth", e.result.tid, 6);
        e.result.max_value = e.max_value;
      }
    }
  }

  // Resolves `key` if its time has come and, if that changed it, sends the webhook.
  void settle_and_report(const std::string& key) {
    Authorization a;
    {
      std::lock_guard lock(mutex);
      auto it = authorizations.find(key);
      if (it == authorizations.end()) {
        return;
      }
      resolve(it->second);
      if (it->second.result.status == AuthorizationStatus::kPending ||
          it->second.reported_revision >= it->second.result.revision) {
        return;
      }
      it->second.reported_revision = it->second.result.revision;
      a = it->second.result;
    }
    std::string id = "evt_" + derived_id("event", key, 16) + "_" + std::to_string(a.revision);
    send_webhook(id, encode_event({key, a}), 1);
  }

  void send_webhook(std::string id, std::string body, int attempt) {
    std::lock_guard teardown(teardown_mutex);
    if (stopping || !webhooks || !client) {
      return;
    }
    http::OutboundRequest r;
    r.url = webhooks->url;
    r.allow_private = true;  // the connector is configured by the operator
    int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
    r.headers = {{"content-type", "application/json"},
                 {"webhook-id", id},
                 {"webhook-timestamp", std::to_string(now)},
                 {"webhook-signature", webhooks::sign(webhooks->key, id, now, body)}};
    r.body = body;
    client->send(std::move(r), [this, id, body, attempt](Result<http::ClientResponse> res) {
      std::lock_guard again(teardown_mutex);
      if (stopping || (res && res->status >= 200 && res->status < 300)) {
        return;
      }
      if (attempt >= webhooks->max_attempts) {
        spdlog::warn("stub: webhook {} abandoned after {} attempts", id, attempt);
        return;
      }
      auto delay = std::min(webhooks->retry_base * (1 << std::min(attempt, 8)), std::chrono::milliseconds(30'000));
      delayer->after(delay, [this, id, body, attempt] { send_webhook(id, body, attempt + 1); });
    });
  }

  // Pix, boleto, redirect and POS payments (ppp::is_asynchronous) wait for the shopper:
  // pending, then approved after the pending delay (or a trigger), with the documents the
  // shopper needs.
  PaymentDocument document_for(const AuthorizeCall& call, const std::string& tid) const {
    PaymentDocument d;
    auto family = ppp::method_family(call.payment_method);
    if (family == ppp::MethodFamily::kPix) {
      d.pix_code = pix_code("pix@idempay-stub.invalid", call.merchant_name.empty() ? "IDEMPAY" : call.merchant_name,
                            "SAO PAULO", call.amount, tid.substr(0, 25));
      d.pix_qr_png = qr_png_base64(d.pix_code).value_or("");
      d.expires_in_seconds = 1800;
    } else if (family == ppp::MethodFamily::kBankInvoice) {
      auto today = std::chrono::duration_cast<std::chrono::hours>(
                       std::chrono::system_clock::now().time_since_epoch()).count() / 24;
      std::string free_field = derived_digits("boleto", call.key, 25);
      auto boleto = make_boleto("001", today + 3, call.amount, free_field);
      if (boleto) {
        d.boleto_barcode = boleto->barcode;
        d.boleto_line = boleto->line;
        d.boleto_line_formatted = boleto->line_formatted;
      }
      d.payment_url = "https://pay.idempay-stub.invalid/boleto/" + tid;
      d.expires_in_seconds = 3 * 86400;
    } else if (family == ppp::MethodFamily::kRedirect) {
      d.payment_url = "https://pay.idempay-stub.invalid/redirect/" + tid + "?code=" + derived_id("code", call.key, 12);
      d.expires_in_seconds = 3600;
    } else {
      d.card_brand = "Visa";
      d.first_digits = "444433";
      d.last_digits = "1111";
      d.expires_in_seconds = 600;
    }
    return d;
  }

  AuthEntry decide(const AuthorizeCall& call) const {
    AuthEntry e;
    e.amount = call.amount;
    if (options.over_capture_percent > 0) {
      e.max_value = call.amount + call.amount * options.over_capture_percent / 100;
    }
    e.installments = call.installments;
    e.interest_rate = call.order.installments_interest_rate;
    e.items = call.order.items.size();
    e.recipients = call.recipients;
    e.result.tid = "T" + derived_id("tid", call.key, 15);
    e.result.nsu = derived_digits("nsu", call.key, 8);
    e.result.acquirer = "idempay-stub";
    e.result.revision = 1;
    const std::string& n = call.card.number;
    AuthorizationStatus outcome = AuthorizationStatus::kApproved;
    if (!adds_up(call.recipients, call.amount)) {
      e.result.status = AuthorizationStatus::kDenied;
      e.final_status = AuthorizationStatus::kDenied;
      e.result.code = "split-mismatch";
      e.result.message = "the recipients' amounts do not add up to the amount";
      return e;
    }
    if (ppp::is_asynchronous(call.payment_method)) {
      e.result.status = AuthorizationStatus::kPending;
      e.final_status = AuthorizationStatus::kApproved;
      e.resolves_at = Clock::now() + options.pending_delay;
      e.result.code = "pending";
      e.result.message = "awaiting the shopper";
      e.result.document = document_for(call, e.result.tid);
      return e;
    }
    // 3-D Secure: the shopper authenticates at the issuer's page first; the outcome follows.
    if (n == "4000000000003220" || n == "4000000000003238") {
      e.result.status = AuthorizationStatus::kPending;
      e.final_status = n == "4000000000003220" ? AuthorizationStatus::kApproved : AuthorizationStatus::kDenied;
      e.resolves_at = Clock::now() + options.pending_delay;
      e.result.code = "challenge";
      e.result.message = "the shopper must authenticate (3-D Secure)";
      e.result.document.payment_url =
          "https://pay.idempay-stub.invalid/3ds/" + e.result.tid + "?code=" + derived_id("3ds", call.key, 12);
      e.result.document.expires_in_seconds = 900;
      return e;
    }
    // The homologation cards come first: two of them do not pass the Luhn check.
    if (n == "4222222222222224" || n == "4222222222222225") {
      e.result.status = AuthorizationStatus::kPending;
      e.final_status = n.back() == '4' ? AuthorizationStatus::kApproved : AuthorizationStatus::kDenied;
      e.resolves_at = Clock::now() + options.pending_delay;
      e.result.code = "pending";
      e.result.message = "awaiting confirmation";
      return e;
    }
    if (n == "4444333322221112" || (!n.empty() && n != "4444333322221111" && !is_valid_pan(n))) {
      outcome = AuthorizationStatus::kDenied;
    }
    e.result.status = outcome;
    e.final_status = outcome;
    e.resolves_at = Clock::now();
    e.result.status = AuthorizationStatus::kPending;
    resolve(e);
    if (outcome == AuthorizationStatus::kDenied && n != "4444333322221112" && !n.empty() && !is_valid_pan(n)) {
      e.result.code = "14";
      e.result.message = "invalid card number";
    }
    return e;
  }

  static bool adds_up(const std::vector<ppp::Recipient>& recipients, Cents amount) {
    Cents sum = 0;
    for (const auto& r : recipients) {
      sum += r.amount;
    }
    return recipients.empty() || sum == amount;
  }

  OperationOutcome execute(const OperationCall& call, AuthEntry* auth) {
    OperationOutcome out;
    out.amount = call.amount;
    auto refuse = [&](std::string code, std::string message) {
      out.succeeded = false;
      out.amount = 0;
      out.code = std::move(code);
      out.message = std::move(message);
      return out;
    };
    if (auth == nullptr) {
      return refuse("unknown-authorization", "no authorization under that key");
    }
    if (!adds_up(call.recipients, call.amount)) {
      return refuse("split-mismatch", "the recipients' amounts do not add up to the amount");
    }
    resolve(*auth);
    if ((call.kind == ppp::OperationKind::kCancel && options.manual_cancel) ||
        (call.kind == ppp::OperationKind::kRefund && options.manual_refund)) {
      out = refuse("manual", "this acquirer does not do that by API");
      out.manual = true;
      return out;
    }
    switch (call.kind) {
      case ppp::OperationKind::kCancel:
        if (auth->captured > 0 || auth->result.status == AuthorizationStatus::kDenied) {
          return refuse("not-cancellable", "authorization is captured or denied");
        }
        auth->cancelled = true;
        out.amount = auth->amount;
        break;
      case ppp::OperationKind::kSettle:
        if (auth->cancelled || auth->result.status != AuthorizationStatus::kApproved ||
            auth->captured + call.amount > std::max(auth->amount, auth->max_value)) {
          return refuse("not-capturable", "amount exceeds what is authorized");
        }
        auth->captured += call.amount;
        break;
      case ppp::OperationKind::kRefund:
        if (auth->refunded + call.amount > auth->captured) {
          return refuse("not-refundable", "amount exceeds what is captured");
        }
        auth->refunded += call.amount;
        break;
    }
    out.succeeded = true;
    out.id = derived_id(ppp::to_string(call.kind), call.key, 16);
    out.message = "ok";
    return out;
  }
};

StubAcquirer::StubAcquirer(StubOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->delayer = std::make_unique<Delayer>();
}

StubAcquirer::~StubAcquirer() {
  // Pending work and late completions see `stopping` and do nothing; the delayer (whose work
  // may call the client) stops before the client, and the client's completions, which may
  // schedule on the delayer, no longer touch it.
  {
    std::lock_guard teardown(impl_->teardown_mutex);
    impl_->stopping = true;
  }
  impl_->delayer.reset();
  impl_->client.reset();
}

void StubAcquirer::enable_webhooks(StubWebhookOptions options) {
  std::lock_guard teardown(impl_->teardown_mutex);  // senders read both under it
  impl_->webhooks = std::move(options);
  impl_->client = std::make_unique<http::Client>();
}

bool StubAcquirer::trigger(const std::string& key, TriggerOutcome outcome) {
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->authorizations.find(key);
    if (it == impl_->authorizations.end()) {
      return false;
    }
    Impl::resolve(it->second);
    if (it->second.result.status != AuthorizationStatus::kPending) {
      return false;
    }
    it->second.final_status = outcome == TriggerOutcome::kApprove ? AuthorizationStatus::kApproved
                                                                  : AuthorizationStatus::kDenied;
    it->second.resolves_at = Clock::now();
    Impl::resolve(it->second);
    if (outcome == TriggerOutcome::kExpire) {
      it->second.result.code = "expired";
      it->second.result.message = "the payment expired";
    }
  }
  impl_->settle_and_report(key);
  return true;
}

void StubAcquirer::authorize(AuthorizeCall call, Callback<Authorization> done) {
  Authorization result;
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->authorizations.find(call.key);
    if (it == impl_->authorizations.end()) {
      it = impl_->authorizations.emplace(call.key, impl_->decide(call)).first;
      if (it->second.result.status == AuthorizationStatus::kPending && impl_->webhooks) {
        impl_->delayer->after(impl_->options.pending_delay + std::chrono::milliseconds(1),
                              [impl = impl_.get(), key = call.key] { impl->settle_and_report(key); });
      }
    }
    ++it->second.calls;
    Impl::resolve(it->second);
    result = it->second.result;
  }
  impl_->answer(done, std::move(result));
}

void StubAcquirer::operate(OperationCall call, Callback<OperationOutcome> done) {
  OperationOutcome outcome;
  {
    std::lock_guard lock(impl_->mutex);
    auto& entries = impl_->operations[static_cast<size_t>(call.kind)];
    auto it = entries.find(call.key);
    if (it == entries.end()) {
      auto auth = impl_->authorizations.find(call.payment_key);
      OperationEntry entry;
      entry.outcome = impl_->execute(call, auth == impl_->authorizations.end() ? nullptr : &auth->second);
      entry.recipients = call.recipients;
      if (call.kind == ppp::OperationKind::kRefund && entry.outcome.succeeded && impl_->options.refund_delay.count() > 0) {
        // Accepted, and held at the card network for a while: the amount is reserved now.
        entry.outcome.succeeded = false;
        entry.outcome.pending = true;
        entry.completes_at = Clock::now() + impl_->options.refund_delay;
      }
      it = entries.emplace(call.key, std::move(entry)).first;
    }
    ++it->second.calls;
    if (it->second.outcome.pending && Clock::now() >= it->second.completes_at) {
      it->second.outcome.pending = false;
      it->second.outcome.succeeded = true;
    }
    outcome = it->second.outcome;
  }
  impl_->answer(done, std::move(outcome));
}

void StubAcquirer::status(std::string key, Callback<std::optional<Authorization>> done) {
  std::optional<Authorization> result;
  {
    std::lock_guard lock(impl_->mutex);
    if (auto it = impl_->authorizations.find(key); it != impl_->authorizations.end()) {
      Impl::resolve(it->second);
      result = it->second.result;
    }
  }
  impl_->answer(done, std::move(result));
}

std::string StubAcquirer::ledger_json() const {
  std::lock_guard lock(impl_->mutex);
  JsonWriter w;
  w.begin_object().key("authorizations").begin_object();
  for (auto& [key, e] : impl_->authorizations) {
    Impl::resolve(e);
    bool charged = e.result.status == AuthorizationStatus::kApproved;
    w.key(key).begin_object();
    w.key("calls").number(e.calls).key("charges").number(charged ? 1 : 0);
    w.key("tid").string(e.result.tid).key("status").string(to_string(e.result.status));
    w.key("amount").raw_number(format_amount(e.amount));
    w.key("installments").number(e.installments).key("interestRate").string(e.interest_rate);
    w.key("items").number(static_cast<int64_t>(e.items)).key("recipients");
    write_split(w, e.recipients);
    w.end_object();
  }
  w.end_object();
  static constexpr std::string_view kNames[] = {"cancellations", "captures", "refunds"};
  for (size_t kind = 0; kind < 3; ++kind) {
    w.key(kNames[kind]).begin_object();
    for (auto& [key, e] : impl_->operations[kind]) {
      w.key(key).begin_object();
      w.key("calls").number(e.calls).key("succeeded").boolean(e.outcome.succeeded);
      w.key("pending").boolean(e.outcome.pending).key("manual").boolean(e.outcome.manual);
      w.key("recipients");
      write_split(w, e.recipients);
      w.key("id").string(e.outcome.id).key("amount").raw_number(format_amount(e.outcome.amount));
      w.end_object();
    }
    w.end_object();
  }
  w.end_object();
  return std::move(w).take();
}

}  // namespace idempay::acquirer
