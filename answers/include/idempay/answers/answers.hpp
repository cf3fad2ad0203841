#pragma once
// The PPP documents the gateway reads, written from the engine's typed answers
// (domain/answers.hpp): a payment's answer (OpenAPI `Success-Approved` and its kin), an
// operation's (cancellationId, settleId or refundId), an error. One writer per document.
#include <string>
#include <string_view>

#include "idempay/domain/answers.hpp"

namespace idempay::answers {

/// A payment's answer, with the fields its method's family adds (a 3-D Secure page, Pix's
/// `vtex.pix-payment` app, a boleto's bar code and typeable line, the POS apps, an approved
/// POS payment's card fragments) and the delay to cancel that family allows.
std::string write_payment(const domain::PaymentAnswer& answer);
/// An operation's answer; `id` empty is written as null.
std::string write_operation(const domain::OperationAnswer& answer);
/// `{"status":"error","code":...,"message":...}`.
std::string write_error(std::string_view code, std::string_view message);
/// A refusal, in its operation's shape when it has one, else as an error document.
std::string write_refusal(const domain::Refused& refused);
/// The bytes of an answer: a document as stored, or its refusal written.
std::string body_of(domain::Reply reply);

/// The HTTP status an outcome is answered with, as the PPP expects it: done 200, not found 404,
/// refused 400, a collision 409, "retry later" 503, an acquirer failure 500 (the gateway retries
/// an operation's 500 for a day), by hand 501.
unsigned http_status(domain::Outcome outcome);

/// The encoder the engine stores its answers with.
class PppAnswers final : public domain::AnswerEncoder {
public:
  std::string payment(const domain::PaymentAnswer& answer) const override { return write_payment(answer); }
  std::string operation(const domain::OperationAnswer& answer) const override { return write_operation(answer); }
  std::string received(bool duplicate) const override;
  std::string terminal_accepted() const override;
};

}  // namespace idempay::answers
