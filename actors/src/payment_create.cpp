#include "payment_actor.hpp"

namespace idempay::actors {

void PaymentActor::on_create(CreateCommand cmd) {
  if (wait_for_load(&PaymentActor::on_create, cmd)) {
    return;
  }
  std::string fingerprint = ppp::payment_fingerprint(ctx_.fingerprint_key, cmd.request);
  if (record_ && !owned_by(cmd.merchant)) {
    audit_now(by(cmd.merchant, entry("access_refused", id_, fingerprint, {}, {},
                                     "Create Payment with another merchant's paymentId")));
    return cmd.sink.deliver(payment_conflict());
  }
  if (record_ && !ppp::same_payment(ctx_.fingerprint_key, record_->fingerprint, fingerprint, cmd.request)) {
    audit_now(by(cmd.merchant, entry("event_refused", id_, fingerprint, {}, {},
                                     "a different payment under this paymentId")));
    return cmd.sink.deliver(payment_conflict());
  }
  if (busy_ && !create_waiters_.empty()) {
    // Only the very same request of the very same merchant joins the call in flight.
    if (fingerprint != inflight_fingerprint_ || cmd.merchant != inflight_merchant_) {
      return cmd.sink.deliver(payment_conflict());
    }
    audit_now(by(cmd.merchant, entry("event_duplicate_reused", id_, fingerprint, {}, {}, "joined the call in flight")));
    create_waiters_.push_back(std::move(cmd.sink));  // coalesce onto the call in flight
    return;
  }
  if (busy_ && create_waiters_.empty() && record_ && is_unresolved(record_->state)) {
    // Being reconciled in the background: answer "not known yet" now instead of waiting.
    audit_now(by(cmd.merchant, entry("event_duplicate_reused", id_, fingerprint, {}, {}, "undefined while reconciling")));
    return cmd.sink.deliver(Reply{200, unresolved_response()});
  }
  bool pos_needs_work = record_ && pos_charge_due();
  if (record_ && !is_unresolved(record_->state) && !pos_needs_work) {
    audit_now(by(cmd.merchant, entry("event_duplicate_reused", id_, fingerprint)));
    return cmd.sink.deliver(Reply{200, record_->response});  // same question, same answer
  }
  if (busy_) {
    deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_create(std::move(cmd)); });
    return;
  }
  busy_ = true;
  inflight_fingerprint_ = fingerprint;
  inflight_merchant_ = cmd.merchant;
  create_waiters_.push_back(cmd.sink);
  if (pos_needs_work && record_->pos_phase == kIdentifyTerminal) {
    return start_pos_charge(std::move(cmd.request));
  }
  if (record_) {
    return reconcile(std::move(cmd.request));
  }
  write_intent(std::move(cmd.request), std::move(fingerprint));
}

bool PaymentActor::pos_charge_due() const {
  if (record_->state != PaymentState::kUndefined || !ppp::is_pos(record_->payment_method)) {
    return false;
  }
  return (record_->pos_phase == kIdentifyTerminal && !record_->terminal_serial.empty())
         || (record_->pos_phase == kAwaitPos && record_->tid.empty());
}

void PaymentActor::start_pos_charge(ppp::CreatePaymentRequest request) {
  PaymentRecord updated = *record_;
  updated.pos_phase = std::string(kAwaitPos);
  updated.response = create_response(updated, "pending", "waiting for the terminal");
  updated.updated_at = now_unix_ms();
  auto req = std::make_shared<ppp::CreatePaymentRequest>(std::move(request));
  storage::Batch batch;
  audit(batch, entry("event_processing_started", id_, updated.fingerprint, {}, {},
                     "await-pos: charging terminal " + updated.terminal_serial));
  batch.push_back({Space::kPayments, id_, encode(updated), etag_});
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this(), updated,
                                                                        req](storage::CommitResult res) {
                       if (!res) {
                         return me->abandon(me->create_waiters_, res.error());
                       }
                       me->record_ = updated;
                       me->etag_ = res->back();
                       me->call_authorize(std::move(*req));
                     }));
}

void PaymentActor::on_terminal(TerminalCommand cmd) {
  if (wait_for_load(&PaymentActor::on_terminal, cmd)) {
    return;
  }
  if (!record_ || !ppp::is_pos(record_->payment_method)) {
    return cmd.sink.deliver(no_pos_payment(id_));
  }
  if (busy_) {
    deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_terminal(std::move(cmd)); });
    return;
  }
  if (record_->terminal_serial == cmd.serial) {
    return cmd.sink.deliver(Reply{200, R"({"accepted":true})"});
  }
  if (record_->pos_phase != kIdentifyTerminal || !record_->terminal_serial.empty()) {
    return cmd.sink.deliver(error_reply(409, "terminal-conflict", "this payment already has its terminal"));
  }
  busy_ = true;
  op_waiters_.push_back(cmd.sink);
  PaymentRecord updated = *record_;
  updated.terminal_serial = cmd.serial;
  updated.updated_at = now_unix_ms();
  storage::Batch batch;
  audit(batch, entry("terminal_submitted", cmd.serial));
  batch.push_back({Space::kPayments, id_, encode(updated), etag_});
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this(),
                                                                        updated](storage::CommitResult res) {
                       if (!res) {
                         return me->abandon(me->op_waiters_, res.error());
                       }
                       me->record_ = updated;
                       me->etag_ = res->back();
                       me->reply_all(me->op_waiters_, Reply{200, R"({"accepted":true})"});
                       me->finish();
                     }));
}

void PaymentActor::write_intent(ppp::CreatePaymentRequest request, std::string fingerprint) {
  PaymentRecord r;
  r.state = PaymentState::kProcessing;
  r.amounts.authorized = request.value;
  r.currency = request.currency;
  r.payment_method = request.payment_method;
  r.order_id = request.order_id;
  r.reference = request.reference;
  r.transaction_id = request.transaction_id;
  r.merchant = request.merchant_name;
  r.owner = inflight_merchant_;
  r.acquirer_route = ctx_.acquirers->route_for(r.owner);
  r.fingerprint = std::move(fingerprint);
  r.callback_url = request.callback_url;
  r.card = request.card_summary;
  r.created_at = r.updated_at = now_unix_ms();
  bool pos = ppp::is_pos(request.payment_method);
  if (pos) {
    // The first POS call only asks for the terminal; nothing reaches the acquirer yet.
    r.state = PaymentState::kUndefined;
    r.pos_phase = std::string(kIdentifyTerminal);
    r.response = create_response(r, "pending", "identify the terminal");
  }
  storage::Batch batch{{Space::kPayments, id_, encode(r), 0}};
  audit(batch, entry("event_received", id_, r.fingerprint));
  audit(batch, pos ? entry("event_processed", id_, r.fingerprint, "", to_string(r.state), "identify-terminal")
                   : entry("event_processing_started", id_, r.fingerprint, "", to_string(r.state)));
  if (is_unresolved(r.state)) {
    batch.push_back({Space::kRecovery, recovery_key(id_), std::string(), std::nullopt, true});
  }
  auto req = std::make_shared<ppp::CreatePaymentRequest>(std::move(request));
  if (pos) {
    return ctx_.store->commit(
        std::move(batch),
        in_actor<storage::CommitResult>([me = shared_from_this(), r](storage::CommitResult res) {
          if (!res) {
            return me->abandon(me->create_waiters_, res.error());
          }
          me->record_ = r;
          me->etag_ = res->front();
          me->reply_all(me->create_waiters_, Reply{200, r.response});
          me->finish();
        }));
  }
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>(
                                           [me = shared_from_this(), r, req](storage::CommitResult res) {
                                             if (!res) {
                                               return me->abandon(me->create_waiters_, res.error());
                                             }
                                             me->record_ = r;
                                             me->etag_ = res->front();
                                             fault::crash_point("after-intent");
                                             me->call_authorize(std::move(*req));
                                           }));
}

void PaymentActor::reconcile(ppp::CreatePaymentRequest request) {
  auto req = std::make_shared<ppp::CreatePaymentRequest>(std::move(request));
  payment_acquirer().status(id_,
                        in_actor<Result<std::optional<acquirer::Authorization>>>(
                            [me = shared_from_this(), req](Result<std::optional<acquirer::Authorization>> r) {
                              if (!r) {
                                return me->on_authorized(tl::unexpected(r.error()));
                              }
                              if (*r) {
                                return me->on_authorized(std::move(**r));
                              }
                              me->call_authorize(std::move(*req));
                            }));
}

void PaymentActor::call_authorize(ppp::CreatePaymentRequest request) {
  acquirer::AuthorizeCall call;
  call.key = id_;
  call.amount = request.value;
  call.currency = request.currency;
  call.payment_method = request.payment_method;
  call.merchant_name = request.merchant_name;
  call.terminal_serial = record_ ? record_->terminal_serial : "";
  call.card = std::move(request.card);  // card data lives only in this call
  payment_acquirer().authorize(std::move(call), in_actor<Result<acquirer::Authorization>>(
                                                [me = shared_from_this()](Result<acquirer::Authorization> r) {
                                                  me->on_authorized(std::move(r));
                                                }));
}

void PaymentActor::on_authorized(Result<acquirer::Authorization> result) {
  if (!result) {
    // Outcome unknown: the record stays unresolved, the callers hear "undefined", and the
    // acquirer's status call under the same key settles it in the background (never a
    // second authorization under a new key).
    spdlog::warn("payment {}: acquirer call failed: {}", id_, result.error().message);
    audit_now(by(inflight_merchant_, entry("event_failed", id_, record_->fingerprint, {}, {},
                                           "acquirer: " + result.error().message)));
    reply_all(create_waiters_, Reply{200, unresolved_response()});
    told_undefined_ = true;
    finish();
    return schedule_reconcile();
  }
  fault::crash_point("after-acquirer");
  PaymentRecord updated = *record_;
  const auto& a = *result;
  updated.state = a.status == acquirer::AuthorizationStatus::kApproved ? PaymentState::kApproved
                  : a.status == acquirer::AuthorizationStatus::kDenied ? PaymentState::kDenied
                                                                       : PaymentState::kUndefined;
  updated.tid = a.tid;
  updated.nsu = a.nsu;
  updated.authorization_id = a.authorization_id;
  updated.acquirer = a.acquirer;
  updated.acquirer_revision = a.revision;
  updated.document = a.document;
  updated.response = create_response(updated, a.code, a.message);
  updated.updated_at = now_unix_ms();
  storage::Batch batch;
  audit(batch, entry("event_processed", id_, record_->fingerprint, to_string(record_->state),
                     to_string(updated.state), background_ ? "reconciled with the acquirer" : ""));
  // Whoever heard "undefined" (or nothing, before a crash) learns the final outcome by callback.
  std::optional<OutboxEntry> callback;
  bool final = updated.state != PaymentState::kUndefined;
  if (final && (background_ || told_undefined_) && !updated.callback_url.empty()) {
    callback = new_callback(updated);
    batch.push_back({Space::kOutbox, callback->id, encode(*callback), 0});
    audit(batch, entry("delivery_written", callback->id));
  }
  if (is_unresolved(record_->state) && !is_unresolved(updated.state)) {
    batch.push_back({Space::kRecovery, recovery_key(id_), std::nullopt, std::nullopt, true});
  }
  batch.push_back({Space::kPayments, id_, encode(updated), etag_});
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this(), updated,
                                                                        callback](storage::CommitResult res) {
                       if (!res) {
                         return me->abandon(me->create_waiters_, res.error());
                       }
                       me->record_ = updated;
                       me->etag_ = res->back();
                       if (callback) {
                         caf::anon_send(me->ctx_.dispatcher, deliver_atom::value, *callback);
                       }
                       fault::crash_point("after-result");
                       me->reply_all(me->create_waiters_, Reply{200, updated.response});
                       me->finish();
                     }));
}

std::string PaymentActor::create_response(const PaymentRecord& r, std::string_view code,
                                          std::string_view message) const {
  ppp::CreatePaymentResponse response;
  response.payment_id = id_;
  response.status = std::string(create_payment_status(r.state));
  response.authorization_id = r.state == PaymentState::kApproved ? r.authorization_id : "";
  response.tid = r.tid;
  response.nsu = r.nsu;
  response.acquirer = r.acquirer;
  response.code = std::string(code);
  response.message = std::string(message);
  add_method_fields(r, response);
  return ppp::write_create_payment_response(response);
}

void PaymentActor::add_method_fields(const PaymentRecord& r, ppp::CreatePaymentResponse& out) const {
  const auto& d = r.document;
  auto family = ppp::method_family(r.payment_method).value_or(ppp::MethodFamily::kCard);
  if (d.expires_in_seconds > 0) {
    out.delay_to_cancel = d.expires_in_seconds;
  }
  if (family == ppp::MethodFamily::kPix) {
    out.delay_to_cancel = std::clamp<int64_t>(out.delay_to_cancel, 900, 3600);
  }
  if (family == ppp::MethodFamily::kPos) {
    out.delay_to_cancel = 600;  // at least the 300 s the wait app polls
    if (r.state == PaymentState::kApproved) {
      out.card_brand = d.card_brand;
      out.first_digits = d.first_digits;
      out.last_digits = d.last_digits;
    }
  }
  if (r.state != PaymentState::kUndefined && r.state != PaymentState::kProcessing) {
    return;
  }
  switch (family) {
    case ppp::MethodFamily::kCard:
      return;
    case ppp::MethodFamily::kPix:
      if (!d.pix_code.empty()) {
        JsonWriter payload;
        payload.begin_object().key("code").string(d.pix_code).key("qrCodeBase64Image").string(d.pix_qr_png).end_object();
        out.payment_app_name = "vtex.pix-payment";
        out.payment_app_payload = payload.str();
      }
      return;
    case ppp::MethodFamily::kBankInvoice:
      out.payment_url = out.bank_issue_invoice_id = d.payment_url;
      out.identification_number = d.boleto_line;
      out.identification_number_formatted = d.boleto_line_formatted;
      out.bar_code_image_type = "i25";
      out.bar_code_image_number = d.boleto_barcode;
      return;
    case ppp::MethodFamily::kRedirect:
      out.payment_url = out.redirect_url = d.payment_url;
      return;
    case ppp::MethodFamily::kPos:
      if (r.pos_phase == kIdentifyTerminal) {
        JsonWriter payload;
        payload.begin_object()
            .key("submitUrl")
            .string(ctx_.public_url + "/pos/" + id_ + "/terminal?token=" + pos_link_token(ctx_.pos_link_key, id_))
            .end_object();
        out.payment_app_name = "vtex.terminal-connector-app";
        out.payment_app_payload = payload.str();
      } else {
        out.payment_app_name = "vtex.challenge-wait-for-confirmation";
        out.payment_app_payload = R"({"secondsWaiting":300})";
      }
      return;
  }
}

}  // namespace idempay::actors
