#pragma once
// The payment-method catalogue: what the manifest declares, Create Payment accepts, and how
// each method behaves (docs/ppp-surface.md#payment-methods). The one owner of method names.
#include <cstdint>
#include <optional>
#include <string_view>

namespace idempay::ppp {

enum class MethodFamily : uint8_t {
  kCard,         ///< credit/debit card brands: answered at once (approved or denied)
  kPix,          ///< answered undefined with the Pix code (paymentAppData vtex.pix-payment)
  kBankInvoice,  ///< boleto: undefined with the bar code and typeable line
  kRedirect,     ///< the generic "Promissories": undefined with a paymentUrl
  kPos,          ///< in-store (Sales App): identify the terminal, then wait for it
};

struct PaymentMethod {
  std::string_view name;
  MethodFamily family;
};

/// Every method this connector declares and accepts, in manifest order.
inline constexpr PaymentMethod kPaymentMethods[] = {
    {"Visa", MethodFamily::kCard},
    {"Mastercard", MethodFamily::kCard},
    {"American Express", MethodFamily::kCard},
    {"Diners", MethodFamily::kCard},
    {"Elo", MethodFamily::kCard},
    {"Hipercard", MethodFamily::kCard},
    {"Discover", MethodFamily::kCard},
    {"JCB", MethodFamily::kCard},
    {"Pix", MethodFamily::kPix},
    {"BankInvoice", MethodFamily::kBankInvoice},
    {"Promissories", MethodFamily::kRedirect},
    {"Venda Direta Credito", MethodFamily::kPos},
    {"Venda Direta Debito", MethodFamily::kPos},
};

/// The family of a declared method; nullopt for a name this connector does not declare.
constexpr std::optional<MethodFamily> method_family(std::string_view name) {
  for (const auto& m : kPaymentMethods) {
    if (m.name == name) {
      return m.family;
    }
  }
  return std::nullopt;
}

/// True for methods the shopper completes later: their Create Payment answers undefined.
constexpr bool is_asynchronous(std::string_view name) {
  auto family = method_family(name);
  return family && *family != MethodFamily::kCard;
}

constexpr bool is_pos(std::string_view name) { return method_family(name) == MethodFamily::kPos; }

/// When a method's split data (`recipients`) comes: never, with the Create Payment, or with
/// the settlement (the manifest's `allowsSplit`).
enum class SplitMode : uint8_t { kDisabled, kOnAuthorize, kOnCapture };

constexpr std::string_view to_string(SplitMode mode) {
  switch (mode) {
    case SplitMode::kOnAuthorize: return "onAuthorize";
    case SplitMode::kOnCapture: return "onCapture";
    case SplitMode::kDisabled: break;
  }
  return "disabled";
}

constexpr std::optional<SplitMode> split_mode_from(std::string_view name) {
  for (auto mode : {SplitMode::kDisabled, SplitMode::kOnAuthorize, SplitMode::kOnCapture}) {
    if (to_string(mode) == name) {
      return mode;
    }
  }
  return std::nullopt;
}

/// The requests that may carry `recipients`: Create Payment, a settlement, a refund.
enum class SplitStep : uint8_t { kAuthorize, kCapture, kRefund };

/// True when the `recipients` a request carries at `step` are a split the acquirer must apply:
/// on Create Payment for a method split on authorization, on a settlement for one split on
/// capture, on a refund for any method that splits at all. Anywhere else they are information
/// only — the gateway sends a marketplace order's recipients whatever the provider's mode — and
/// are accepted and left out of the money movement.
constexpr bool splits_at(SplitMode mode, SplitStep step) {
  switch (step) {
    case SplitStep::kAuthorize: return mode == SplitMode::kOnAuthorize;
    case SplitStep::kCapture: return mode == SplitMode::kOnCapture;
    case SplitStep::kRefund: return mode != SplitMode::kDisabled;
  }
  return false;
}

/// What a deployment offers for one method: its split mode, and the timers its Create Payment
/// answers carry (docs/ppp-surface.md#the-manifest-from-configuration).
struct MethodTerms {
  SplitMode allows_split = SplitMode::kDisabled;
  int64_t delay_to_auto_settle = 21'600;                 ///< at most 604800 (7 days)
  int64_t delay_to_auto_settle_after_antifraud = 1'800;  ///< at most 604800
  int64_t delay_to_cancel = 21'600;                      ///< 600..2592000; Pix 900..3600
  bool manual_cancel = false;  ///< cancellations of this method are done by hand (501 cancel-manually)
  bool manual_refund = false;  ///< refunds of this method are done by hand (501 refund-manually)
};

}  // namespace idempay::ppp
