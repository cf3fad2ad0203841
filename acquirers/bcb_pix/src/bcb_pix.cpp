#include "idempay/acquirers/bcb_pix.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "documents.hpp"
#include "idempay/acquirers/brcode.hpp"
#include "idempay/base/crypto.hpp"
#include "token_source.hpp"

namespace idempay::acquirer {

std::string pix_txid(std::string_view payment_id) {
  return crypto::to_hex(crypto::sha256("idempay pix txid\n" + std::string(payment_id))).substr(0, 32);
}

std::string pix_refund_id(std::string_view request_id) {
  return crypto::to_hex(crypto::sha256("idempay pix devolucao\n" + std::string(request_id))).substr(0, 32);
}

std::string pix_reference(std::string_view txid) { return "bcb-pix/" + std::string(txid); }

std::string pix_amount(Cents amount) {
  std::string cents = std::to_string(amount % 100);
  return std::to_string(amount / 100) + "." + (cents.size() < 2 ? "0" : "") + cents;
}

Result<Cents> parse_pix_amount(std::string_view text) {
  auto dot = text.find('.');
  bool shaped = dot != std::string_view::npos && dot >= 1 && dot <= 10 && text.size() == dot + 3 &&
                std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; }) &&
                text.find('.', dot + 1) == std::string_view::npos;
  if (!shaped) {
    return make_error(ErrorCode::kInvalidArgument, "not a Pix amount (\\d{1,10}\\.\\d{2}): " + std::string(text.substr(0, 20)));
  }
  return std::stoll(std::string(text.substr(0, dot))) * 100 + std::stoll(std::string(text.substr(dot + 1)));
}

namespace {

constexpr std::string_view kActive = "ATIVA";
constexpr std::string_view kPaid = "CONCLUIDA";
constexpr std::string_view kRemovedByReceiver = "REMOVIDA_PELO_USUARIO_RECEBEDOR";
constexpr const char* kAcquirerName = "API Pix";
// A pending charge and its final outcome: the core applies an outcome newer than the one it has.
constexpr int64_t kPendingRevision = 1;
constexpr int64_t kFinalRevision = 2;
// The document: a devolucao may be asked for up to 90 days after the Pix was settled.
constexpr int64_t kRefundWindowMs = 90LL * 24 * 3600 * 1000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_removed(std::string_view status) { return status.rfind("REMOVIDA", 0) == 0; }

Authorization outcome(AuthorizationStatus status, const std::string& txid, std::string code, std::string message) {
  Authorization a;
  a.status = status;
  a.tid = txid;
  a.acquirer = kAcquirerName;
  a.code = std::move(code);
  a.message = std::move(message);
  a.revision = status == AuthorizationStatus::kPending ? kPendingRevision : kFinalRevision;
  return a;
}

// What the charge's status means for the payment. An ATIVA charge past its expiry is still
// ATIVA in the document's terms (the status is the record's, not the charge's): the caller
// removes it first (expired_and_active).
Authorization authorization_of(const pix::Charge& charge, const std::string& txid) {
  if (charge.status == kPaid && !charge.received.empty()) {
    Authorization a = outcome(AuthorizationStatus::kApproved, txid, "paid", "Pix received");
    a.authorization_id = charge.received.front().end_to_end_id;
    a.nsu = charge.received.front().end_to_end_id;
    return a;
  }
  if (is_removed(charge.status)) {
    return outcome(AuthorizationStatus::kDenied, txid, "removed", "the Pix charge was removed (" + charge.status + ")");
  }
  Authorization a = outcome(AuthorizationStatus::kPending, txid, "pending", "waiting for the Pix");
  a.watch = true;  // GET /cob tells when it is paid: asked on a schedule, webhook or not
  a.document.pix_code = charge.code;
  a.document.pix_qr_png = qr_png_base64(charge.code).value_or("");
  a.document.expires_in_seconds = charge.expiry_seconds;
  return a;
}

class BcbPixAcquirer final : public Acquirer {
public:
  explicit BcbPixAcquirer(BcbPixOptions options)
      : options_(std::move(options)),
        client_(std::make_unique<http::Client>(options_.tls)),
        tokens_(*client_, options_) {}
  // The client's thread stops first: none of its callbacks may reach a token source gone.
  ~BcbPixAcquirer() override { client_.reset(); }

  void authorize(AuthorizeCall call, Callback<Authorization> done) override;
  void operate(OperationCall call, Callback<OperationOutcome> done) override;
  void status(std::string key, Callback<std::optional<Authorization>> done) override;
  std::string reference(const std::string& key) const override { return pix_reference(pix_txid(key)); }

private:
  using Answer = std::function<void(Result<http::ClientResponse>)>;

  // One API call with the shared token; a 401 forgets it, fetches another and tries once more.
  void call(std::string method, std::string path, std::string body, Answer done, bool retried = false);

  // The charge's outcome, removing it first when it is ATIVA past its expiry (so that it can
  // no longer be paid, then reported denied).
  void settle_status(const std::string& txid, pix::Charge charge, Callback<std::optional<Authorization>> done,
                     bool may_remove = true);
  void look_up(const std::string& txid, Callback<std::optional<Authorization>> done, bool may_remove = true);

  void cancel(const OperationCall& call, Callback<OperationOutcome> done);
  void refund(OperationCall call, Callback<OperationOutcome> done);
  void ask_refund(OperationCall call, std::string e2e, Callback<OperationOutcome> done);
  void read_back_refund(const std::string& path, Cents amount, std::string refusal, Callback<OperationOutcome> done);

  BcbPixOptions options_;
  std::unique_ptr<http::Client> client_;
  TokenSource tokens_;
};

void BcbPixAcquirer::call(std::string method, std::string path, std::string body, Answer done, bool retried) {
  tokens_.get([this, method = std::move(method), path = std::move(path), body = std::move(body), done = std::move(done),
               retried](Result<std::string> token) mutable {
    if (!token) {
      return done(tl::unexpected(token.error()));
    }
    http::OutboundRequest r;
    r.method = method;
    r.url = options_.base_url + path;
    r.headers = {{"authorization", "Bearer " + *token}, {"accept", "application/json"}};
    if (!body.empty()) {
      r.headers.push_back({"content-type", "application/json"});
    }
    r.body = body;
    r.connect_timeout = options_.timeout;
    r.total_timeout = options_.timeout;
    r.max_response_bytes = 256 * 1024;
    r.allow_private = true;  // the PSP is the operator's configuration, not a request's
    client_->send(std::move(r), [this, method = std::move(method), path = std::move(path), body = std::move(body),
                                done = std::move(done), retried, used = *token](Result<http::ClientResponse> answer) mutable {
      if (answer && answer->status == 401 && !retried) {
        tokens_.forget(used);
        return call(std::move(method), std::move(path), std::move(body), std::move(done), true);
      }
      done(std::move(answer));
    });
  });
}

// An answer the adapter cannot act on: the outcome stays unknown and the core asks again.
tl::unexpected<Error> unexpected_answer(std::string_view what, const http::ClientResponse& r) {
  return make_error(ErrorCode::kUnavailable,
                    "API Pix " + std::string(what) + ": HTTP " + std::to_string(r.status) + ": " +
                        pix::problem_text(r.status, r.body));
}

void BcbPixAcquirer::authorize(AuthorizeCall call, Callback<Authorization> done) {
  std::string txid = pix_txid(call.key);
  if (call.currency != "BRL") {
    return done(outcome(AuthorizationStatus::kDenied, txid, "currency", "Pix charges are in BRL only"));
  }
  if (call.amount <= 0 || call.amount > 9'999'999'999) {
    return done(outcome(AuthorizationStatus::kDenied, txid, "amount", "a Pix charge is from 0.01 to 99999999.99"));
  }
  // The charge expires when the gateway would cancel the payment (its delay to cancel, which
  // the answer keeps within Pix's 15 to 60 minutes).
  int64_t expiry = std::clamp<int64_t>(call.payable_for_seconds > 0 ? call.payable_for_seconds : 1800, 900, 3600);
  // PUT, never POST /cob: under the same txid a retry finds the same charge.
  this->call("PUT", "/cob/" + txid, pix::charge_request(call, expiry, options_.pix_key),
             [this, txid, done = std::move(done)](Result<http::ClientResponse> r) {
               if (!r) {
                 return done(tl::unexpected(r.error()));  // unknown: the status call settles it
               }
               if (r->status == 200 || r->status == 201) {
                 auto charge = pix::read_charge(r->body);
                 if (!charge) {
                   return done(tl::unexpected(charge.error()));
                 }
                 return settle_status(txid, std::move(*charge), [done](Result<std::optional<Authorization>> a) {
                   done(a ? Result<Authorization>(**a) : tl::unexpected(a.error()));
                 });
               }
               if (r->status == 400 || r->status == 403 || r->status == 404) {
                 // The charge exists and is no longer ATIVA, or the PSP refused it: which one
                 // only the charge itself can say.
                 std::string refusal = pix::problem_text(r->status, r->body);
                 return look_up(txid, [txid, refusal, done](Result<std::optional<Authorization>> a) {
                   if (a && !*a) {
                     return done(outcome(AuthorizationStatus::kDenied, txid, "refused", "the PSP refused the charge: " + refusal));
                   }
                   done(a ? Result<Authorization>(**a) : tl::unexpected(a.error()));
                 });
               }
               done(unexpected_answer("PUT /cob", *r));
             });
}

void BcbPixAcquirer::status(std::string key, Callback<std::optional<Authorization>> done) {
  look_up(pix_txid(key), std::move(done));
}

void BcbPixAcquirer::look_up(const std::string& txid, Callback<std::optional<Authorization>> done, bool may_remove) {
  call("GET", "/cob/" + txid, "", [this, txid, done = std::move(done), may_remove](Result<http::ClientResponse> r) {
    if (!r) {
      return done(tl::unexpected(r.error()));
    }
    if (r->status == 404) {
      return done(std::nullopt);  // the PSP never saw it: authorizing again is safe
    }
    if (r->status != 200) {
      return done(unexpected_answer("GET /cob", *r));
    }
    auto charge = pix::read_charge(r->body);
    if (!charge) {
      return done(tl::unexpected(charge.error()));
    }
    settle_status(txid, std::move(*charge), done, may_remove);
  });
}

void BcbPixAcquirer::settle_status(const std::string& txid, pix::Charge charge,
                                   Callback<std::optional<Authorization>> done, bool may_remove) {
  bool expired = charge.status == kActive &&
                 now_ms() > charge.created_ms + (charge.expiry_seconds + options_.expiry_grace.count()) * 1000;
  if (!expired) {
    return done(authorization_of(charge, txid));
  }
  if (!may_remove) {
    return done(make_error(ErrorCode::kUnavailable, "API Pix: an expired charge stays ATIVA after its removal"));
  }
  // Removed, it can no longer be paid; a removal that fails because it was paid meanwhile
  // finds it CONCLUIDA on the second look.
  std::string body = std::string(R"({"status":")") + std::string(kRemovedByReceiver) + R"("})";
  call("PATCH", "/cob/" + txid, std::move(body), [this, txid, done](Result<http::ClientResponse> r) {
    if (!r) {
      return done(tl::unexpected(r.error()));
    }
    if (r->status == 200) {
      return done(outcome(AuthorizationStatus::kDenied, txid, "expired", "the Pix charge expired unpaid"));
    }
    look_up(txid, done, false);
  });
}

void BcbPixAcquirer::operate(OperationCall call, Callback<OperationOutcome> done) {
  switch (call.kind) {
    case ppp::OperationKind::kSettle: {
      // A Pix is settled when it is paid: the settlement is the record of what was received.
      OperationOutcome o;
      o.succeeded = true;
      o.id = "settled-" + pix_txid(call.payment_key);
      o.amount = call.amount;
      return done(o);
    }
    case ppp::OperationKind::kCancel:
      return cancel(call, std::move(done));
    case ppp::OperationKind::kRefund:
      return refund(std::move(call), std::move(done));
  }
}

OperationOutcome refused(std::string code, std::string message) {
  OperationOutcome o;
  o.code = std::move(code);
  o.message = std::move(message);
  return o;
}

void BcbPixAcquirer::cancel(const OperationCall& op, Callback<OperationOutcome> done) {
  std::string txid = pix_txid(op.payment_key);
  std::string body = std::string(R"({"status":")") + std::string(kRemovedByReceiver) + R"("})";
  call("PATCH", "/cob/" + txid, std::move(body), [this, txid, done = std::move(done)](Result<http::ClientResponse> r) {
    if (!r) {
      return done(tl::unexpected(r.error()));
    }
    auto removed = [txid] {
      OperationOutcome o;
      o.succeeded = true;
      o.id = "removed-" + txid;
      return o;
    };
    if (r->status == 200) {
      return done(removed());
    }
    // Not ATIVA (removed already by a first attempt, or paid), or never created.
    call("GET", "/cob/" + txid, "", [txid, removed, done](Result<http::ClientResponse> got) {
      if (!got) {
        return done(tl::unexpected(got.error()));
      }
      if (got->status == 404) {
        return done(removed());  // nothing to pay: nothing can be paid
      }
      auto charge = got->status == 200 ? pix::read_charge(got->body) : Result<pix::Charge>(unexpected_answer("GET /cob", *got));
      if (!charge) {
        return done(tl::unexpected(charge.error()));
      }
      if (is_removed(charge->status)) {
        return done(removed());
      }
      if (charge->status == kPaid) {
        return done(refused("pix-paid", "the Pix was paid and cannot be cancelled: refund it"));
      }
      done(make_error(ErrorCode::kUnavailable, "API Pix: the charge is still " + charge->status + " after its removal"));
    });
  });
}

void BcbPixAcquirer::refund(OperationCall op, Callback<OperationOutcome> done) {
  std::string txid = pix_txid(op.payment_key);
  call("GET", "/cob/" + txid, "", [this, op = std::move(op), done = std::move(done)](Result<http::ClientResponse> r) mutable {
    if (!r) {
      return done(tl::unexpected(r.error()));
    }
    if (r->status == 404) {
      return done(refused("not-paid", "the PSP has no such Pix charge"));
    }
    auto charge = r->status == 200 ? pix::read_charge(r->body) : Result<pix::Charge>(unexpected_answer("GET /cob", *r));
    if (!charge) {
      return done(tl::unexpected(charge.error()));
    }
    if (charge->status != kPaid || charge->received.empty()) {
      return done(refused("not-paid", "nothing was received for this Pix charge"));
    }
    const pix::Received& paid = charge->received.front();
    if (now_ms() > paid.at_ms + kRefundWindowMs) {
      return done(refused("refund-window", "a Pix may be refunded up to 90 days after it was paid"));
    }
    ask_refund(std::move(op), paid.end_to_end_id, std::move(done));
  });
}

OperationOutcome refund_outcome(const pix::Refund& refund) {
  OperationOutcome o;
  o.id = refund.return_id.empty() ? refund.id : refund.return_id;
  o.amount = refund.amount;
  if (refund.status == "DEVOLVIDO") {
    o.succeeded = true;
  } else if (refund.status == "EM_PROCESSAMENTO") {
    o.pending = true;  // asked again under the same requestId until it ends
  } else {
    o.code = "refund-failed";
    o.message = refund.reason.empty() ? "the PSP did not carry out the refund (" + refund.status + ")" : refund.reason;
  }
  return o;
}

void BcbPixAcquirer::ask_refund(OperationCall op, std::string e2e, Callback<OperationOutcome> done) {
  std::string path = "/pix/" + e2e + "/devolucao/" + pix_refund_id(op.key);
  Cents amount = op.amount;
  call("PUT", path, pix::refund_request(amount), [this, path, amount, done = std::move(done)](Result<http::ClientResponse> r) {
    if (!r) {
      return done(tl::unexpected(r.error()));
    }
    if (r->status == 200 || r->status == 201) {
      auto refund = pix::read_refund(r->body);
      return refund ? done(refund_outcome(*refund)) : done(tl::unexpected(refund.error()));
    }
    if (r->status == 400) {
      // The document answers a reused id with 400, not with the first answer: a retry of a
      // refund already asked for reads it back.
      return read_back_refund(path, amount, pix::problem_text(r->status, r->body), std::move(done));
    }
    done(unexpected_answer("PUT devolucao", *r));
  });
}

void BcbPixAcquirer::read_back_refund(const std::string& path, Cents amount, std::string refusal,
                                      Callback<OperationOutcome> done) {
  call("GET", path, "", [amount, refusal = std::move(refusal), done = std::move(done)](Result<http::ClientResponse> r) {
    if (!r) {
      return done(tl::unexpected(r.error()));
    }
    if (r->status == 404) {
      return done(refused("refund-refused", "the PSP refused the refund: " + refusal));
    }
    auto refund = r->status == 200 ? pix::read_refund(r->body) : Result<pix::Refund>(unexpected_answer("GET devolucao", *r));
    if (!refund) {
      return done(tl::unexpected(refund.error()));
    }
    if (refund->amount != amount) {
      return done(refused("refund-mismatch", "a refund of another amount was asked for under this requestId"));
    }
    done(refund_outcome(*refund));
  });
}

}  // namespace

std::unique_ptr<domain::Acquirer> make_bcb_pix_acquirer(BcbPixOptions options) {
  return std::make_unique<BcbPixAcquirer>(std::move(options));
}

}  // namespace idempay::acquirer
