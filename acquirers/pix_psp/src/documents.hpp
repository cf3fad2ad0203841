#pragma once
// The fake PSP's side of the API Pix documents: requests checked as the document's schemas and
// rules ask, answers written so that they satisfy its schemas (its own examples do not always:
// a `location` without a scheme is not the `uri` its format asks for), and RFC 7807 problems
// with the document's error types.
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/http/server.hpp"
#include "ledger.hpp"

namespace idempay::acquirer::fake {

/// A CobSolicitada checked: expiracao > 0, valor.original "\d{1,10}\.\d{2}" and not zero, a
/// chave of at most 77, a devedor with exactly one of cpf (11 digits) and cnpj (14 of
/// [0-9A-Z]) and a nome. Fills `charge`'s amount, expiry, key and debtor; the violation else.
Status read_charge_request(std::string_view body, Charge& charge);

/// CobGerada (PUT, PATCH) or CobCompleta (GET: with the Pix received and their devolucoes).
std::string charge_json(const Charge& charge, bool complete);
std::string pix_json(const Received& pix, const std::string& txid, const std::string& key);
std::string refund_json(const Refund& refund);

/// A DevolucaoSolicitada's valor; the violation else.
Result<Cents> read_refund_request(std::string_view body);

/// An RFC 7807 problem with the document's error type (https://pix.bcb.gov.br/api/v2/error/<type>).
http::Response problem(unsigned status, std::string_view type, std::string_view title, std::string_view detail);

/// "\d{1,10}\.\d{2}"
std::string amount_text(Cents amount);

}  // namespace idempay::acquirer::fake
