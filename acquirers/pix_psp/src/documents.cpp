#include "documents.hpp"

#include <algorithm>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/timestamps.hpp"

namespace idempay::acquirer::fake {

namespace {

bool all_of(std::string_view s, bool (*ok)(char)) { return !s.empty() && std::all_of(s.begin(), s.end(), ok); }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool digit_or_capital(char c) { return digit(c) || (c >= 'A' && c <= 'Z'); }

Result<Cents> parse_amount(std::string_view text) {
  auto dot = text.find('.');
  if (dot == std::string_view::npos || dot < 1 || dot > 10 || text.size() != dot + 3 ||
      !all_of(text.substr(0, dot), digit) || !all_of(text.substr(dot + 1), digit)) {
    return make_error(ErrorCode::kInvalidArgument, "valor must match \\d{1,10}\\.\\d{2}");
  }
  return std::stoll(std::string(text.substr(0, dot))) * 100 + std::stoll(std::string(text.substr(dot + 1)));
}

tl::unexpected<Error> violation(std::string what) { return make_error(ErrorCode::kInvalidArgument, std::move(what)); }

Status read_debtor(const JsonValue& debtor, Charge& charge) {
  if (debtor.type() != JsonValue::Type::kObject) {
    return violation("devedor must be an object");
  }
  std::string cpf = debtor.string_or("cpf");
  std::string cnpj = debtor.string_or("cnpj");
  std::string name = debtor.string_or("nome");
  if (!cpf.empty() == !cnpj.empty()) {
    return violation("devedor needs exactly one of cpf and cnpj");
  }
  if ((!cpf.empty() && (cpf.size() != 11 || !all_of(cpf, digit))) ||
      (!cnpj.empty() && (cnpj.size() != 14 || !all_of(cnpj, digit_or_capital)))) {
    return violation("devedor.cpf is 11 digits, devedor.cnpj 14 of [0-9A-Z]");
  }
  if (name.empty() || name.size() > 200) {
    return violation("devedor.nome is required, at most 200 characters");
  }
  JsonWriter w;
  w.begin_object().key(cpf.empty() ? "cnpj" : "cpf").string(cpf.empty() ? cnpj : cpf).key("nome").string(name).end_object();
  charge.debtor_json = std::move(w).take();
  return {};
}

void write_location(JsonWriter& w, const Charge& c) {
  w.key("loc").begin_object();
  w.key("id").number(c.location_id);
  w.key("location").string("https://" + c.location);
  w.key("tipoCob").string("cob");
  w.key("criacao").string(format_rfc3339(c.created_ms));
  w.key("txid").string(c.txid);
  w.end_object();
  w.key("location").string("https://" + c.location);
}

}  // namespace

std::string amount_text(Cents amount) {
  std::string cents = std::to_string(amount % 100);
  return std::to_string(amount / 100) + "." + (cents.size() < 2 ? "0" : "") + cents;
}

Status read_charge_request(std::string_view body, Charge& charge) {
  auto doc = JsonValue::parse(body);
  if (!doc || doc->type() != JsonValue::Type::kObject) {
    return violation("the body must be a JSON object");
  }
  const JsonValue* calendar = doc->find("calendario");
  const JsonValue* value = doc->find("valor");
  if (calendar == nullptr || value == nullptr || doc->find("chave") == nullptr) {
    return violation("calendario, valor and chave are required");
  }
  int64_t expiry = calendar->int_or("expiracao", 86'400);
  if (expiry <= 0) {
    return violation("calendario.expiracao must be greater than zero");
  }
  auto amount = parse_amount(value->string_or("original"));
  if (!amount || *amount == 0) {
    return violation(amount ? "valor.original must not be zero" : "valor.original must match \\d{1,10}\\.\\d{2}");
  }
  std::string key = doc->string_or("chave");
  if (key.empty() || key.size() > 77) {
    return violation("chave is a Pix key of at most 77 characters");
  }
  charge.debtor_json.clear();
  if (const JsonValue* debtor = doc->find("devedor")) {
    if (auto read = read_debtor(*debtor, charge); !read) {
      return read;
    }
  }
  charge.expiry_seconds = expiry;
  charge.amount = *amount;
  charge.key = std::move(key);
  return {};
}

std::string charge_json(const Charge& c, bool complete) {
  JsonWriter w;
  w.begin_object();
  w.key("calendario").begin_object().key("criacao").string(format_rfc3339(c.created_ms));
  w.key("expiracao").number(c.expiry_seconds).end_object();
  w.key("txid").string(c.txid);
  w.key("revisao").number(c.revision);
  write_location(w, c);
  w.key("status").string(c.status);
  if (!c.debtor_json.empty()) {
    w.key("devedor").raw_number(c.debtor_json);  // written by read_debtor: a JSON object
  }
  w.key("valor").begin_object().key("original").string(amount_text(c.amount)).end_object();
  w.key("chave").string(c.key);
  w.key("pixCopiaECola").string(c.code);
  if (complete && c.paid) {
    w.key("pix").begin_array().raw_number(pix_json(*c.paid, c.txid, c.key)).end_array();
  }
  w.end_object();
  return std::move(w).take();
}

std::string pix_json(const Received& pix, const std::string& txid, const std::string& key) {
  JsonWriter w;
  w.begin_object();
  w.key("endToEndId").string(pix.end_to_end_id);
  w.key("txid").string(txid);
  w.key("valor").string(amount_text(pix.amount));
  w.key("chave").string(key);
  w.key("horario").string(format_rfc3339(pix.at_ms));
  if (!pix.refunds.empty()) {
    w.key("devolucoes").begin_array();
    for (const auto& r : pix.refunds) {
      w.raw_number(refund_json(r));
    }
    w.end_array();
  }
  w.end_object();
  return std::move(w).take();
}

std::string refund_json(const Refund& r) {
  JsonWriter w;
  w.begin_object();
  w.key("id").string(r.id);
  w.key("rtrId").string(r.return_id);
  w.key("valor").string(amount_text(r.amount));
  w.key("natureza").string("ORIGINAL");
  w.key("horario").begin_object().key("solicitacao").string(format_rfc3339(r.requested_ms));
  if (r.settled_ms > 0) {
    w.key("liquidacao").string(format_rfc3339(r.settled_ms));
  }
  w.end_object();
  w.key("status").string(r.status);
  if (!r.reason.empty()) {
    w.key("motivo").string(r.reason);
  }
  w.end_object();
  return std::move(w).take();
}

Result<Cents> read_refund_request(std::string_view body) {
  auto doc = JsonValue::parse(body);
  if (!doc || doc->type() != JsonValue::Type::kObject) {
    return violation("the body must be a JSON object");
  }
  auto amount = parse_amount(doc->string_or("valor"));
  if (!amount || *amount == 0) {
    return violation("valor must match \\d{1,10}\\.\\d{2} and not be zero");
  }
  return amount;
}

http::Response problem(unsigned status, std::string_view type, std::string_view title, std::string_view detail) {
  JsonWriter w;
  w.begin_object();
  w.key("type").string("https://pix.bcb.gov.br/api/v2/error/" + std::string(type));
  w.key("title").string(title);
  w.key("status").number(status);
  w.key("detail").string(detail);
  w.end_object();
  return http::Response(status, std::move(w).take(), "application/problem+json");
}

}  // namespace idempay::acquirer::fake
