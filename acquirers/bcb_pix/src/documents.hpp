#pragma once
// The API Pix documents the adapter sends and reads: an immediate charge (`cob`: CobSolicitada
// out, CobGerada/CobCompleta in), a refund (`devolucao`: DevolucaoSolicitada out, Devolucao
// in) and the RFC 7807 problems the PSP answers errors with.
#include <cstdint>
#include <string>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"
#include "idempay/domain/acquirer.hpp"

namespace idempay::acquirer::pix {

/// The CobSolicitada of a payment: its expiry, amount, receiver key and, when the buyer is
/// known, the debtor (CPF or CNPJ and name).
std::string charge_request(const AuthorizeCall& call, int64_t expiry_seconds, const std::string& pix_key);

/// One Pix received for a charge.
struct Received {
  std::string end_to_end_id;
  Cents amount = 0;
  int64_t at_ms = 0;  ///< `horario`
};

/// The fields of a charge the adapter acts on.
struct Charge {
  std::string status;  ///< ATIVA, CONCLUIDA, REMOVIDA_PELO_USUARIO_RECEBEDOR, REMOVIDA_PELO_PSP
  std::string code;    ///< pixCopiaECola
  int64_t created_ms = 0;
  int64_t expiry_seconds = 0;
  Cents amount = 0;
  std::vector<Received> received;  ///< `pix`
};
Result<Charge> read_charge(std::string_view body);

struct Refund {
  std::string id;
  std::string return_id;  ///< rtrId
  Cents amount = 0;
  std::string status;  ///< EM_PROCESSAMENTO, DEVOLVIDO, NAO_REALIZADO
  std::string reason;  ///< motivo
};
Result<Refund> read_refund(std::string_view body);
std::string refund_request(Cents amount);

/// What an error answer says (its detail, else its title), for the log and the caller: at
/// most 200 characters; "HTTP <status>" when the body says nothing readable.
std::string problem_text(unsigned status, std::string_view body);

}  // namespace idempay::acquirer::pix
