#pragma once
// A receipt: what the store holds of one payment — its merchant, state and amounts, and the
// sequence number and hash of its audit chain's head — signed by the instance's key in force
// as a compact JWS (alg EdDSA, typ "idempay-receipt+jws", the key's id in "kid"). Anyone with
// the anchor (the published JWK Set) checks it with any JOSE library; the chain's head ties
// it to the payment's whole history as `idempay audit verify` recomputes it.
#include <cstdint>
#include <string>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/domain/payment_reads.hpp"
#include "idempay/signing/ed25519.hpp"

namespace idempay::receipts {

inline constexpr std::string_view kReceiptType = "idempay-receipt+jws";

/// What a receipt states. Amounts as the PPP writes them ("12.34"), in `currency`.
struct ReceiptClaims {
  std::string payment_id;
  std::string merchant;  ///< the authenticated merchant that created the payment
  std::string state;
  std::string currency;
  std::string authorized;
  std::string settled;
  std::string refunded;
  uint64_t audit_seq = 0;   ///< the chain's last entry
  std::string audit_head;   ///< its hash (hex)
  int64_t issued_at = 0;    ///< Unix seconds ("iat")
};

/// The claims of a stored payment, issued now; kNotFound for a paymentId never stored.
/// `owner`: the merchant to name (the caller resolves payments stored before owners).
Result<ReceiptClaims> claims_of(const domain::PaymentSnapshot& stored, const std::string& payment_id,
                                const std::string& owner);

/// The payload's JSON: every claim, in a fixed order.
std::string claims_json(const ReceiptClaims& claims);

/// The compact JWS of `claims` signed by `key`.
std::string issue(const signing::SigningKey& key, const ReceiptClaims& claims);

/// A receipt checked against `anchor`: its claims and the key that signed it. kInvalidArgument
/// saying what failed: not a JWS, not a receipt, a key not in the anchor, a bad signature.
struct CheckedReceipt {
  ReceiptClaims claims;
  std::string kid;
};
Result<CheckedReceipt> check(std::string_view jws, const std::vector<signing::PublicKey>& anchor);

}  // namespace idempay::receipts
