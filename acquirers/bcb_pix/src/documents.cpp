#include "documents.hpp"

#include <algorithm>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/timestamps.hpp"

namespace idempay::acquirer::pix {

namespace {

std::string digits_and_letters(std::string_view text) {
  std::string out;
  for (char c : text) {
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z')) {
      out.push_back(c);
    }
  }
  return out;
}

bool all_digits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The UTF-8 prefix of `text` of at most `max` bytes, cut between characters.
std::string_view utf8_prefix(std::string_view text, size_t max) {
  if (text.size() <= max) {
    return text;
  }
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  return text.substr(0, end);
}

// The PSP's own words, for a log line and a gateway's answer: at most `max` bytes, control
// characters as spaces.
std::string shown(std::string_view text, size_t max) {
  std::string out(utf8_prefix(text, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      c = ' ';
    }
  }
  return out;
}

// The debtor, when the buyer's document is a well-formed CPF (11 digits) or CNPJ (14 of
// [0-9A-Z], the alphanumeric CNPJ included) and a name goes with it; the document allows
// neither without the other.
void write_debtor(JsonWriter& w, const ppp::Buyer& buyer) {
  std::string name = buyer.is_corporate && !buyer.corporate_name.empty()
                         ? buyer.corporate_name
                         : buyer.first_name + (buyer.last_name.empty() ? "" : " " + buyer.last_name);
  if (name.empty()) {
    return;
  }
  std::string corporate = digits_and_letters(buyer.corporate_document);
  std::string document = digits_and_letters(buyer.document);
  if (buyer.is_corporate && corporate.size() == 14) {
    w.key("devedor").begin_object().key("cnpj").string(corporate);
  } else if (document.size() == 11 && all_digits(document)) {
    w.key("devedor").begin_object().key("cpf").string(document);
  } else if (document.size() == 14) {
    w.key("devedor").begin_object().key("cnpj").string(document);
  } else {
    return;
  }
  w.key("nome").string(utf8_prefix(name, 200)).end_object();
}

// A `valor` string: "\d{1,10}\.\d{2}".
Result<Cents> amount_member(const JsonValue& object, std::string_view name) {
  const JsonValue* v = object.find(name);
  if (v == nullptr || v->type() != JsonValue::Type::kString) {
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + " missing");
  }
  return parse_pix_amount(v->text());
}

}  // namespace

std::string charge_request(const AuthorizeCall& call, int64_t expiry_seconds, const std::string& pix_key) {
  JsonWriter w;
  w.begin_object();
  w.key("calendario").begin_object().key("expiracao").number(expiry_seconds).end_object();
  write_debtor(w, call.order.buyer);
  w.key("valor").begin_object().key("original").string(pix_amount(call.amount)).end_object();
  w.key("chave").string(pix_key);
  w.end_object();
  return std::move(w).take();
}

Result<Charge> read_charge(std::string_view body) {
  auto doc = JsonValue::parse(body);
  if (!doc || doc->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kUnavailable, "the PSP's charge is not a JSON object");
  }
  Charge c;
  c.status = doc->string_or("status");
  c.code = doc->string_or("pixCopiaECola");
  const JsonValue* calendar = doc->find("calendario");
  const JsonValue* value = doc->find("valor");
  auto created = calendar != nullptr ? parse_rfc3339(calendar->string_or("criacao")) : make_error(ErrorCode::kInvalidArgument, "");
  auto amount = value != nullptr ? amount_member(*value, "original") : make_error(ErrorCode::kInvalidArgument, "");
  if (c.status.empty() || !created || !amount) {
    return make_error(ErrorCode::kUnavailable, "the PSP's charge lacks its status, calendario.criacao or valor.original");
  }
  c.created_ms = *created;
  c.expiry_seconds = calendar->int_or("expiracao", 86'400);  // the document's default
  c.amount = *amount;
  if (const JsonValue* received = doc->find("pix"); received != nullptr && received->type() == JsonValue::Type::kArray) {
    for (const JsonValue& p : received->items()) {
      Received r;
      r.end_to_end_id = p.string_or("endToEndId");
      auto paid = amount_member(p, "valor");
      auto at = parse_rfc3339(p.string_or("horario"));
      if (r.end_to_end_id.empty() || !paid || !at) {
        return make_error(ErrorCode::kUnavailable, "the PSP's charge lists a Pix without endToEndId, valor or horario");
      }
      r.amount = *paid;
      r.at_ms = *at;
      c.received.push_back(std::move(r));
    }
  }
  return c;
}

Result<Refund> read_refund(std::string_view body) {
  auto doc = JsonValue::parse(body);
  if (!doc || doc->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kUnavailable, "the PSP's devolucao is not a JSON object");
  }
  Refund r;
  r.id = doc->string_or("id");
  r.return_id = doc->string_or("rtrId");
  r.status = doc->string_or("status");
  r.reason = shown(doc->string_or("motivo"), 140);
  auto amount = amount_member(*doc, "valor");
  if (r.id.empty() || r.status.empty() || !amount) {
    return make_error(ErrorCode::kUnavailable, "the PSP's devolucao lacks its id, valor or status");
  }
  r.amount = *amount;
  return r;
}

std::string refund_request(Cents amount) {
  JsonWriter w;
  w.begin_object().key("valor").string(pix_amount(amount)).end_object();
  return std::move(w).take();
}

std::string problem_text(unsigned status, std::string_view body) {
  auto doc = JsonValue::parse(body);
  std::string text = doc ? doc->string_or("detail", doc->string_or("title")) : "";
  if (text.empty()) {
    return "HTTP " + std::to_string(status);
  }
  return shown(text, 200);
}

}  // namespace idempay::acquirer::pix
