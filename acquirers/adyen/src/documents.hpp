#pragma once
// The Checkout API's documents as the adapter writes and reads them: PaymentRequest,
// PaymentResponse, the modification requests and their answers, ServiceError.
#include <cstdint>
#include <string>
#include <string_view>

#include "idempay/acquirers/adyen.hpp"

namespace idempay::acquirer::adyen {

/// A PaymentRequest for `call`, the card's fields as the document names them (or the Secure
/// Proxy's tokens in their place). The same call always gives the same bytes: a retry under
/// the same Idempotency-Key must be the identical request.
std::string payment_request(const AuthorizeCall& call, int64_t minor_units, const AdyenOptions& options,
                            bool card_tokens);

/// A PaymentRequest for a boleto (`boletobancario`), due at `due_unix_ms` (sent as deliverAt):
/// the buyer's name, CPF or CNPJ and billing address, which a boleto must carry;
/// kInvalidArgument naming what the order lacks. The same call and due date, the same bytes.
Result<std::string> boleto_request(const AuthorizeCall& call, int64_t minor_units,
                                   const AdyenOptions& options, int64_t due_unix_ms);

struct PaymentResult {
  std::string result_code;
  std::string psp_reference;
  std::string refusal_reason;
  std::string refusal_reason_code;
  std::string auth_code;
  std::string redirect_url;     ///< action.url of a redirect action
  std::string redirect_method;  ///< action.method
  std::string action_type;      ///< action.type: redirect, voucher...
  std::string voucher_url;      ///< a voucher's downloadUrl (a boleto's page)
  std::string voucher_reference;   ///< a voucher's reference (a boleto's typeable line)
  std::string voucher_expires_at;  ///< a voucher's expiresAt
};
Result<PaymentResult> read_payment_response(std::string_view body);

/// A capture, refund (amount > 0 or `with_amount`) or cancel request.
std::string modification_request(const std::string& merchant_account, const std::string& reference, int64_t minor_units,
                                  const std::string& currency, bool with_amount);
/// A cancel of a payment known only by the connector's reference (POST /cancels).
std::string reference_cancel_request(const std::string& merchant_account, const std::string& payment_reference);
/// The modification's pspReference when its status is "received".
Result<std::string> read_modification_response(std::string_view body);

/// A ServiceError's errorCode and message (or the status and the body's start).
struct ServiceError {
  std::string error_code;
  std::string message;
};
ServiceError read_service_error(unsigned status, std::string_view body);

}  // namespace idempay::acquirer::adyen
