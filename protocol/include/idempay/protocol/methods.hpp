#pragma once
// The payment-method catalogue: what the manifest declares, Create Payment accepts, and how
// each method behaves (notes/ppp.md §5, §10). The one owner of method names.
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

}  // namespace idempay::ppp
