#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idempay/protocol/card.hpp"
#include "idempay/protocol/methods.hpp"
#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"

namespace idempay::ppp {

/// A split payment's share (docs/ppp-surface.md#split-payments): who gets how much of the payment, the
/// settlement or the refund it comes with.
struct Recipient {
  std::string id;
  std::string name;
  std::string document_type;
  std::string document;
  std::string role;  ///< "seller" or "marketplace"
  Cents amount = 0;
  bool charge_processing_fee = false;
  bool chargeback_liable = false;
  Cents commission_amount = 0;
};

struct Address {
  std::string country;  ///< ISO 3166 alpha-3
  std::string street;
  std::string number;
  std::string complement;
  std::string neighborhood;
  std::string postal_code;
  std::string city;
  std::string state;
};

struct Buyer {
  std::string id;
  std::string first_name;
  std::string last_name;
  std::string document;
  std::string document_type;
  std::string email;
  std::string phone;
  bool is_corporate = false;
  std::string corporate_name;
  std::string trade_name;
  std::string corporate_document;
};

struct Item {
  std::string id;
  std::string name;
  Cents price = 0;
  int64_t quantity = 0;
  Cents discount = 0;
  std::string delivery_type;
  std::string category_id;
  std::string seller_id;
};

/// What a Create Payment says about the order, for the acquirer's anti-fraud and instalment
/// plans. Personal data: passed to the acquirer, never stored or logged.
struct OrderData {
  std::string installments_interest_rate;  ///< as sent (a decimal, percent); empty if absent
  Cents installments_value = 0;
  std::string device_fingerprint;
  std::string ip_address;
  Cents shipping_value = 0;
  Cents tax_value = 0;
  Cents total_cart_value = 0;
  Buyer buyer;
  Address shipping_address;
  Address billing_address;
  std::vector<Item> items;
  std::vector<std::pair<std::string, std::string>> merchant_settings;  ///< the manifest's customFields
};

/// Create Payment request, validated. `card` holds secrets and must never be persisted;
/// everything else is safe to store.
struct CreatePaymentRequest {
  std::string payment_id;
  std::string transaction_id;
  std::string reference;
  std::string order_id;
  std::string payment_method;
  std::string merchant_name;
  std::string currency;
  std::string shopper_interaction;
  std::string callback_url;
  std::string return_url;
  std::string inbound_request_url;
  std::string secure_proxy_url;
  Cents value = 0;
  int64_t installments = 1;
  bool verification_only = false;
  bool sandbox = false;
  /// Sent by the gateway's homologation suite (X-VTEX-API-Is-TestSuite: true, a header, not
  /// part of the body): the payment goes to the deterministic stub, never to real money.
  bool test_suite = false;
  CardSecret card;
  CardSummary card_summary;
  OrderData order;
  std::vector<Recipient> recipients;  ///< split on authorization
};

enum class OperationKind : uint8_t { kCancel, kSettle, kRefund };
std::string_view to_string(OperationKind kind);

/// Cancellation, settlement or refund request, validated.
struct OperationRequest {
  OperationKind kind = OperationKind::kCancel;
  std::string payment_id;
  std::string request_id;
  std::string transaction_id;
  std::string authorization_id;
  std::string tid;
  std::string settle_id;
  Cents value = 0;  ///< settle/refund amount; 0 for cancellations (always total)
  std::vector<Recipient> recipients;  ///< split on capture, or of a refund
  /// The merchant's configuration says this kind of operation is done by hand: it is
  /// answered 501 (cancel-manually / refund-manually) without calling the acquirer. Not part
  /// of the body.
  bool manual = false;
  /// An operator's manual operation: who and why ("by operator NAME: REASON"), written into
  /// the audit trail's operation_received entry. Not part of the body nor of the fingerprint.
  std::string note;
};

/// Largest request body the connector accepts (the gateway's bodies are a few KiB).
inline constexpr size_t kMaxBodyBytes = 256 * 1024;

/// Parses and validates a Create Payment body. `recipients` are parsed within their bounds
/// (types, at most 100, field lengths) but not checked against the value: whether they are a
/// split at all depends on the method's split mode (check_split). `body` may be reallocated to add the
/// parser's padding. kInvalidArgument with a message naming the field on any problem.
Result<CreatePaymentRequest> parse_create_payment(std::string& body);

/// Parses a cancellation/settlement/refund body for the payment named in the path; a body
/// `paymentId` that differs from `path_payment_id` is kInvalidArgument.
Result<OperationRequest> parse_operation(OperationKind kind, std::string_view path_payment_id,
                                         std::string& body);

/// A split the method applies at this step: each recipient has an id, a role of "seller" or
/// "marketplace" and a commission within its amount, and the amounts add up to `total`.
/// kInvalidArgument naming the recipient otherwise.
Status check_split(const std::vector<Recipient>& recipients, Cents total);

/// True for identifiers safe to use as storage keys and URL path segments: 1–128 of
/// [A-Za-z0-9._:-], but not "." or "..".
bool is_valid_identifier(std::string_view id);

/// Keyed fingerprint over the fields that define a payment (value, currency, method,
/// orderId, reference, card BIN and last 4), computed without any card secret, over an
/// unambiguous (length-prefixed) encoding. Starts with its version, "v2:".
std::string payment_fingerprint(std::string_view key, const CreatePaymentRequest& request);

/// True if `stored`, a fingerprint of any version, is `request`'s; `current` is
/// payment_fingerprint(key, request), which the caller has computed already. Payments stored
/// with version 1 fingerprints keep replaying.
bool same_payment(std::string_view key, std::string_view stored, std::string_view current,
                  const CreatePaymentRequest& request);

/// Keyed fingerprint of an operation (kind, payment, value).
std::string operation_fingerprint(std::string_view key, const OperationRequest& request);

// -- what answers carry ------------------------------------------------------------------

/// What the shopper needs to pay an asynchronous method, as the acquirer issued it.
struct PaymentDocument {
  std::string payment_url;    ///< boleto page or redirect target
  std::string pix_code;       ///< Pix copy-and-paste code (EMV BR Code)
  std::string pix_qr_png;     ///< base64 PNG of the Pix code's QR
  std::string boleto_barcode;         ///< 44 digits
  std::string boleto_line;            ///< 47 digits
  std::string boleto_line_formatted;
  int64_t expires_in_seconds = 0;     ///< how long the document stays payable
  // Card-present (POS) result details
  std::string card_brand;
  std::string first_digits;
  std::string last_digits;
};

/// The headers the gateway sends a merchant's credentials in (docs/ppp-surface.md#credentials): the
/// X-VTEX-API pair, then the X-PROVIDER-API pair (connectors with usesProviderHeadersName).
inline constexpr std::string_view kCredentialHeaders[][2] = {
    {"X-VTEX-API-AppKey", "X-VTEX-API-AppToken"}, {"X-PROVIDER-API-AppKey", "X-PROVIDER-API-AppToken"}};

}  // namespace idempay::ppp
