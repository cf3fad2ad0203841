#include "idempay/acquirers/pix_psp.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "documents.hpp"
#include "idempay/acquirers/brcode.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/timestamps.hpp"
#include "idempay/base/webhooks.hpp"
#include "idempay/tracing/recent.hpp"
#include "idempay/http/routes.hpp"
#include "ledger.hpp"

namespace idempay::acquirer {

using fake::Charge;
using fake::problem;
using fake::Received;
using fake::Refund;

namespace {

constexpr int64_t kRefundWindowMs = 90LL * 24 * 3600 * 1000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool alphanumeric(std::string_view s, size_t min, size_t max) {
  return s.size() >= min && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

// 32 of [A-Za-z0-9] starting with `prefix` (E: a Pix's endToEndId, D: a devolucao's rtrId),
// numbered so that every run of the fake hands out different ones.
std::string pacs_id(char prefix, uint64_t sequence) {
  std::string digest = crypto::to_hex(crypto::sha256(std::to_string(now_ms()) + "/" + std::to_string(sequence)));
  return std::string(1, prefix) + "99999999" + digest.substr(0, 23);
}

namespace route {
enum : int { kToken, kCharge, kPix, kRefund, kWebhook, kPay, kAge, kEndRefund, kExpireTokens, kLedger };
}

std::vector<http::Route> routes() {
  return {
      {"POST", "/oauth/token", route::kToken},
      {"PUT", "/cob/{}", route::kCharge},
      {"GET", "/cob/{}", route::kCharge},
      {"PATCH", "/cob/{}", route::kCharge},
      {"GET", "/pix/{}", route::kPix},
      {"PUT", "/pix/{}/devolucao/{}", route::kRefund},
      {"GET", "/pix/{}/devolucao/{}", route::kRefund},
      {"PUT", "/webhook/{}", route::kWebhook},
      {"GET", "/webhook/{}", route::kWebhook},
      {"DELETE", "/webhook/{}", route::kWebhook},
      {"POST", "/fake/pay/{}", route::kPay},
      {"POST", "/fake/age/{}", route::kAge},
      {"POST", "/fake/devolucao/{}/{}", route::kEndRefund},
      {"POST", "/fake/expire-tokens", route::kExpireTokens},
      {"GET", "/fake/ledger", route::kLedger},
  };
}

http::Response json(unsigned status, std::string body) { return http::Response(status, std::move(body)); }

}  // namespace

struct PixPsp::State {
  explicit State(PixPspOptions o)
      : options(std::move(o)), client(std::make_unique<http::Client>(options.webhook_tls)), table(routes()) {
    worker = std::thread([this] { run_due(); });
  }
  // The worker stops first (its jobs send through the client), then the client's thread (its
  // callbacks use the state), before any member goes.
  ~State() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    worker.join();
    client.reset();
  }

  PixPspOptions options;
  std::unique_ptr<http::Client> client;
  http::RouteTable table;

  mutable std::mutex mutex;  // guards what follows
  std::map<std::string, Charge> charges;           // by txid
  std::map<std::string, std::string> txid_of_pix;  // by endToEndId
  std::map<std::string, int64_t> tokens;           // token -> valid until (ms)
  std::map<std::string, std::pair<std::string, int64_t>> webhooks;  // by chave: URL, registered at
  std::map<std::string, uint64_t> requests;        // "PUT /cob" -> count
  tracing::RecentTraceparents traceparents;        // what a test checks propagation by
  uint64_t tokens_issued = 0;
  uint64_t sequence = 0;
  fake::WebhookCounts notifications;

  // Work for later (a devolucao that ends, a notification retried), run by `worker`.
  std::multimap<int64_t, std::function<void()>> due;
  bool stopping = false;
  std::condition_variable wake;
  std::thread worker;

  void later(std::chrono::milliseconds delay, std::function<void()> job) {
    {
      std::lock_guard lock(mutex);
      due.emplace(now_ms() + delay.count(), std::move(job));
    }
    wake.notify_one();
  }

  void run_due() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      if (due.empty()) {
        wake.wait(lock);
        continue;
      }
      int64_t first = due.begin()->first;
      if (first > now_ms()) {
        wake.wait_for(lock, std::chrono::milliseconds(first - now_ms()));
        continue;
      }
      auto job = std::move(due.begin()->second);
      due.erase(due.begin());
      lock.unlock();
      job();
      lock.lock();
    }
  }

  // -- OAuth2 ---------------------------------------------------------------------------------

  http::Response issue_token(const http::Request& request) {
    std::string id;
    std::string secret;
    std::string_view basic = request.header("authorization");
    if (basic.rfind("Basic ", 0) == 0) {
      auto decoded = webhooks::base64_decode(basic.substr(6));
      auto colon = decoded ? decoded->find(':') : std::string::npos;
      if (colon != std::string::npos) {
        id = decoded->substr(0, colon);
        secret = decoded->substr(colon + 1);
      }
    }
    if (request.body.find("grant_type=client_credentials") == std::string::npos) {
      return json(400, R"({"error":"unsupported_grant_type"})");
    }
    if (id != options.client_id || secret != options.client_secret || secret.empty()) {
      return json(401, R"({"error":"invalid_client"})");
    }
    std::string token = crypto::to_hex(crypto::sha256(crypto::random_bytes(32)));
    std::lock_guard lock(mutex);
    tokens[token] = now_ms() + options.token_lifetime.count() * 1000;
    ++tokens_issued;
    JsonWriter w;
    w.begin_object().key("access_token").string(token).key("token_type").string("Bearer");
    w.key("expires_in").number(options.token_lifetime.count()).key("scope").string("cob.write cob.read pix.write pix.read webhook.write webhook.read");
    w.end_object();
    return json(200, std::move(w).take());
  }

  bool authorized(const http::Request& request) {
    std::string_view header = request.header("authorization");
    if (header.rfind("Bearer ", 0) != 0) {
      return false;
    }
    std::lock_guard lock(mutex);
    auto it = tokens.find(std::string(header.substr(7)));
    return it != tokens.end() && now_ms() < it->second;
  }

  // -- charges ---------------------------------------------------------------------------------

  http::Response put_charge(const std::string& txid, const std::string& body) {
    if (!alphanumeric(txid, 26, 35)) {
      return problem(400, "CobOperacaoInvalida", "Cobrança inválida.", "txid must match [a-zA-Z0-9]{26,35}");
    }
    Charge asked;
    if (auto read = fake::read_charge_request(body, asked); !read) {
      return problem(400, "CobOperacaoInvalida", "Cobrança inválida.", read.error().message);
    }
    if (!options.pix_keys.empty() &&
        std::find(options.pix_keys.begin(), options.pix_keys.end(), asked.key) == options.pix_keys.end()) {
      return problem(400, "CobOperacaoInvalida", "Cobrança inválida.", "cob.chave belongs to another receiver");
    }
    std::lock_guard lock(mutex);
    auto [it, created] = charges.try_emplace(txid);
    Charge& c = it->second;
    ++c.puts;
    if (!created && c.status != "ATIVA") {
      return problem(400, "CobOperacaoInvalida", "Cobrança inválida.",
                     "the charge exists, is not ATIVA, and this request would change it");
    }
    if (created) {
      c.txid = txid;
      c.created_ms = now_ms();
      c.location_id = static_cast<int64_t>(++sequence);
      c.location = options.location_host + "/qr/v2/" + crypto::to_hex(crypto::sha256(txid)).substr(0, 32);
      c.code = dynamic_pix_code(c.location, "IDEMPAY FAKE PSP", "SAO PAULO");
    } else if (asked.amount != c.amount || asked.expiry_seconds != c.expiry_seconds || asked.key != c.key ||
               asked.debtor_json != c.debtor_json) {
      ++c.revision;  // an upsert of an ATIVA charge that changes it is a revision
    }
    c.amount = asked.amount;
    c.expiry_seconds = asked.expiry_seconds;
    c.key = asked.key;
    c.debtor_json = asked.debtor_json;
    return json(201, fake::charge_json(c, false));
  }

  http::Response patch_charge(const std::string& txid, const std::string& body) {
    auto doc = JsonValue::parse(body);
    bool only_removal = doc && doc->type() == JsonValue::Type::kObject && doc->members().size() == 1 &&
                        doc->string_or("status") == "REMOVIDA_PELO_USUARIO_RECEBEDOR";
    std::lock_guard lock(mutex);
    auto it = charges.find(txid);
    if (it == charges.end()) {
      return problem(404, "CobNaoEncontrado", "Cobrança não encontrada.", "no charge with this txid");
    }
    Charge& c = it->second;
    ++c.patches;
    if (c.status != "ATIVA") {
      return problem(400, "CobOperacaoInvalida", "Cobrança inválida.", "the charge is not ATIVA");
    }
    if (!only_removal) {
      return problem(400, "CobOperacaoInvalida", "Cobrança inválida.",
                     "this PSP revises a charge only to remove it: {\"status\": \"REMOVIDA_PELO_USUARIO_RECEBEDOR\"}");
    }
    c.status = "REMOVIDA_PELO_USUARIO_RECEBEDOR";
    ++c.revision;
    return json(200, fake::charge_json(c, false));
  }

  http::Response get_charge(const std::string& txid) {
    std::lock_guard lock(mutex);
    auto it = charges.find(txid);
    if (it == charges.end()) {
      return problem(404, "CobNaoEncontrado", "Cobrança não encontrada.", "no charge with this txid");
    }
    return json(200, fake::charge_json(it->second, true));
  }

  // -- Pix received and their devolucoes --------------------------------------------------------

  Result<std::string> pay(const std::string& txid) {
    std::string key;
    std::string notification;
    std::string e2e;
    {
      std::lock_guard lock(mutex);
      auto it = charges.find(txid);
      if (it == charges.end()) {
        return make_error(ErrorCode::kNotFound, "no charge with this txid");
      }
      Charge& c = it->second;
      if (c.status != "ATIVA" || c.expired(now_ms())) {
        return make_error(ErrorCode::kIllegalState, c.status != "ATIVA" ? "the charge is " + c.status : "the charge has expired");
      }
      Received pix;
      pix.end_to_end_id = pacs_id('E', ++sequence);
      pix.amount = c.amount;
      pix.at_ms = now_ms();
      c.paid = pix;
      c.status = "CONCLUIDA";
      txid_of_pix[pix.end_to_end_id] = txid;
      key = c.key;
      e2e = pix.end_to_end_id;
      notification = "{\"pix\":[" + fake::pix_json(pix, txid, key) + "]}";
    }
    notify(key, std::move(notification));
    return e2e;
  }

  // The charge the Pix `e2e` paid, or null.
  Charge* charge_of(const std::string& e2e) {
    auto found = txid_of_pix.find(e2e);
    return found == txid_of_pix.end() ? nullptr : &charges.at(found->second);
  }

  http::Response get_pix(const std::string& e2e) {
    std::lock_guard lock(mutex);
    Charge* c = charge_of(e2e);
    if (c == nullptr) {
      return problem(404, "PixNaoEncontrado", "Pix não encontrado.", "no Pix with this endToEndId");
    }
    return json(200, fake::pix_json(*c->paid, c->txid, c->key));
  }

  http::Response put_refund(const std::string& e2e, const std::string& id, const std::string& body) {
    auto amount = fake::read_refund_request(body);
    if (!alphanumeric(id, 1, 35) || !amount) {
      return problem(400, "PixDevolucaoInvalida", "Devolução inválida.",
                     amount ? "id must match [a-zA-Z0-9]{1,35}" : amount.error().message);
    }
    Refund refund;
    {
      std::lock_guard lock(mutex);
      Charge* c = charge_of(e2e);
      if (c == nullptr) {
        return problem(404, "PixNaoEncontrado", "Pix não encontrado.", "no Pix with this endToEndId");
      }
      Received& pix = *c->paid;
      bool reused = std::any_of(pix.refunds.begin(), pix.refunds.end(), [&](const Refund& r) { return r.id == id; });
      if (reused) {
        return problem(400, "PixDevolucaoInvalida", "Devolução inválida.", "this id was already used by another devolucao");
      }
      if (pix.refunded_or_pending() + *amount > pix.amount) {
        return problem(400, "PixDevolucaoInvalida", "Devolução inválida.", "the devolucoes would exceed the Pix");
      }
      if (now_ms() > pix.at_ms + kRefundWindowMs) {
        return problem(400, "PixDevolucaoInvalida", "Devolução inválida.", "more than 90 days after the Pix");
      }
      refund.id = id;
      refund.return_id = pacs_id('D', ++sequence);
      refund.amount = *amount;
      refund.requested_ms = now_ms();
      bool at_once = options.refund_delay.count() == 0;
      refund.status = at_once ? "DEVOLVIDO" : "EM_PROCESSAMENTO";
      refund.settled_ms = at_once ? refund.requested_ms : 0;
      pix.refunds.push_back(refund);
    }
    if (options.refund_delay.count() > 0) {
      later(options.refund_delay, [this, e2e, id] { end_refund(e2e, id, "DEVOLVIDO"); });
    } else {
      notify_refund(e2e);
    }
    return json(201, fake::refund_json(refund));
  }

  // A devolucao in processing ends: DEVOLVIDO or NAO_REALIZADO (then it counts for nothing).
  bool end_refund(const std::string& e2e, const std::string& id, const std::string& status) {
    {
      std::lock_guard lock(mutex);
      Charge* c = charge_of(e2e);
      auto* refunds = c == nullptr ? nullptr : &c->paid->refunds;
      auto it = refunds == nullptr ? std::vector<Refund>::iterator()
                                   : std::find_if(refunds->begin(), refunds->end(), [&](const Refund& r) { return r.id == id; });
      if (refunds == nullptr || it == refunds->end() || it->status != "EM_PROCESSAMENTO") {
        return false;
      }
      it->status = status;
      it->settled_ms = status == "DEVOLVIDO" ? now_ms() : 0;
      it->reason = status == "DEVOLVIDO" ? "" : "Devolução recusada pelo PSP pagador";
    }
    notify_refund(e2e);  // the document: a devolucao reaching a final status is notified
    return true;
  }

  http::Response get_refund(const std::string& e2e, const std::string& id) {
    std::lock_guard lock(mutex);
    Charge* c = charge_of(e2e);
    if (c != nullptr) {
      for (const auto& r : c->paid->refunds) {
        if (r.id == id) {
          return json(200, fake::refund_json(r));
        }
      }
    }
    return problem(404, "PixDevolucaoNaoEncontrada", "Devolução não encontrada.", "no devolucao with this id for this Pix");
  }

  // -- notifications ---------------------------------------------------------------------------

  http::Response webhook(const std::string& method, const std::string& key, const std::string& body) {
    std::lock_guard lock(mutex);
    if (method == "PUT") {
      auto doc = JsonValue::parse(body);
      std::string url = doc ? doc->string_or("webhookUrl") : "";
      if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) {
        return problem(400, "WebhookOperacaoInvalida", "Webhook inválido.", "webhook.webhookUrl must be a URL");
      }
      webhooks[key] = {url, now_ms()};
      return http::Response(200, "", "text/plain");
    }
    auto it = webhooks.find(key);
    if (it == webhooks.end()) {
      return problem(404, "WebhookNaoEncontrado", "Webhook não encontrado.", "no webhook for this chave");
    }
    if (method == "DELETE") {
      webhooks.erase(it);
      return http::Response(204, "", "text/plain");
    }
    JsonWriter w;
    w.begin_object().key("webhookUrl").string(it->second.first).key("chave").string(key);
    w.key("cnpj").string("12345678000195").key("criacao").string(format_rfc3339(it->second.second)).end_object();
    return json(200, std::move(w).take());
  }

  void notify_refund(const std::string& e2e) {
    std::string key;
    std::string notification;
    {
      std::lock_guard lock(mutex);
      Charge* c = charge_of(e2e);
      if (c == nullptr) {
        return;
      }
      key = c->key;
      notification = "{\"pix\":[" + fake::pix_json(*c->paid, c->txid, c->key) + "]}";
    }
    notify(key, std::move(notification));
  }

  // POST {webhookUrl}/pix, tried again with a doubling delay until it is answered 2xx.
  void notify(const std::string& key, std::string body, int attempt = 1) {
    std::string url;
    {
      std::lock_guard lock(mutex);
      auto it = webhooks.find(key);
      if (it == webhooks.end()) {
        return;
      }
      url = it->second.first;
      ++notifications.sent;
    }
    http::OutboundRequest r;
    r.method = "POST";
    r.url = (url.back() == '/' ? url.substr(0, url.size() - 1) : url) + "/pix";
    r.headers = {{"content-type", "application/json"}};
    r.body = body;
    r.allow_private = true;  // a fake PSP for loopback tests and local trials
    r.total_timeout = std::chrono::milliseconds(5'000);
    client->send(std::move(r), [this, key, body, attempt](Result<http::ClientResponse> answer) {
      bool delivered = answer && answer->status / 100 == 2;
      if (delivered || attempt >= options.webhook_attempts) {
        std::lock_guard lock(mutex);
        ++(delivered ? notifications.delivered : notifications.abandoned);
        return;
      }
      spdlog::info("pix-psp: notification attempt {} failed ({}); trying again", attempt,
                   answer ? "HTTP " + std::to_string(answer->status) : answer.error().message);
      later(options.webhook_retry_base * (1 << (attempt - 1)), [this, key, body, attempt] { notify(key, body, attempt + 1); });
    });
  }

  // -- the ledger ------------------------------------------------------------------------------

  std::string ledger() const {
    std::lock_guard lock(mutex);
    JsonWriter w;
    w.begin_object();
    w.key("tokensIssued").number(static_cast<int64_t>(tokens_issued));
    w.key("charges").begin_array();
    for (const auto& [txid, c] : charges) {
      w.begin_object().key("txid").string(txid).key("status").string(c.status).key("valor").string(fake::amount_text(c.amount));
      w.key("puts").number(c.puts).key("patches").number(c.patches).key("revisao").number(c.revision);
      w.key("paid").number(c.paid ? 1 : 0);
      if (c.paid) {
        w.key("endToEndId").string(c.paid->end_to_end_id);
        w.key("devolucoes").begin_array();
        for (const auto& r : c.paid->refunds) {
          w.raw_number(fake::refund_json(r));  // a JSON object
        }
        w.end_array();
      }
      w.end_object();
    }
    w.end_array();
    w.key("notifications").begin_object().key("sent").number(static_cast<int64_t>(notifications.sent));
    w.key("delivered").number(static_cast<int64_t>(notifications.delivered));
    w.key("abandoned").number(static_cast<int64_t>(notifications.abandoned)).end_object();
    w.key("requests").begin_object();
    for (const auto& [name, count] : requests) {
      w.key(name).number(static_cast<int64_t>(count));
    }
    w.end_object().key("traceparents");
    traceparents.write(w);
    w.end_object();
    return std::move(w).take();
  }

  http::Response answer(const http::Request& request);

  void count(const http::Request& request, std::string_view pattern) {
    std::lock_guard lock(mutex);
    std::string route = request.method + " " + std::string(pattern);
    ++requests[route];
    traceparents.note(std::move(route), request.header("traceparent"));
  }
};

PixPsp::PixPsp(PixPspOptions options) : state_(std::make_unique<State>(std::move(options))) {}
PixPsp::~PixPsp() = default;

Result<std::string> PixPsp::pay(const std::string& txid) { return state_->pay(txid); }
std::string PixPsp::ledger_json() const { return state_->ledger(); }

http::Response PixPsp::State::answer(const http::Request& request) {
  State& s = *this;
  auto found = s.table.find(request.method, request.path);
  if (!found.match) {
    return problem(found.allow.empty() ? 404 : 405, "NaoEncontrado", "Not found", "no such route");
  }
  const auto& p = found.match->params;
  const int id = found.match->id;
  s.count(request, found.match->pattern);
  bool api = id == route::kCharge || id == route::kPix || id == route::kRefund || id == route::kWebhook;
  if (api && !s.authorized(request)) {
    return problem(401, "AcessoNegado", "Unauthorized", "a valid bearer access token is required");
  }
  switch (id) {
    case route::kToken:
      return s.issue_token(request);
    case route::kCharge:
      return request.method == "PUT"     ? s.put_charge(p[0], request.body)
             : request.method == "PATCH" ? s.patch_charge(p[0], request.body)
                                         : s.get_charge(p[0]);
    case route::kPix:
      return s.get_pix(p[0]);
    case route::kRefund:
      return request.method == "PUT" ? s.put_refund(p[0], p[1], request.body) : s.get_refund(p[0], p[1]);
    case route::kWebhook:
      return s.webhook(request.method, p[0], request.body);
    case route::kPay: {
      auto paid = s.pay(p[0]);
      return paid ? json(200, "{\"endToEndId\":\"" + *paid + "\"}")
                  : problem(paid.error().code == ErrorCode::kNotFound ? 404 : 409, "Recusado", "Refused",
                            paid.error().message);
    }
    case route::kAge: {
      // Backdates a charge, as if it had been created `seconds` earlier: expiry without waiting.
      auto doc = JsonValue::parse(request.body);
      int64_t seconds = doc ? doc->int_or("seconds", 0) : 0;
      std::lock_guard lock(s.mutex);
      auto it = s.charges.find(p[0]);
      if (it == s.charges.end() || seconds <= 0) {
        return problem(404, "CobNaoEncontrado", "Not found", "no such charge, or no positive seconds");
      }
      it->second.created_ms -= seconds * 1000;
      return json(200, R"({"aged":true})");
    }
    case route::kEndRefund: {
      auto doc = JsonValue::parse(request.body);
      std::string status = doc ? doc->string_or("status") : "";
      bool known = status == "DEVOLVIDO" || status == "NAO_REALIZADO";
      bool ended = known && s.end_refund(p[0], p[1], status);
      return ended ? json(200, R"({"ended":true})")
                   : problem(409, "Recusado", "Refused",
                             "no such devolucao in processing, or an unknown status");
    }
    case route::kExpireTokens: {
      std::lock_guard lock(s.mutex);
      s.tokens.clear();
      return json(200, R"({"expired":true})");
    }
    case route::kLedger:
      return json(200, s.ledger());
  }
  return problem(404, "NaoEncontrado", "Not found", "no such route");  // every route id is handled above
}

void PixPsp::handle(http::Request request, http::Responder respond) {
  http::Response response = state_->answer(request);
  if (state_->options.latency.count() == 0) {
    return respond(std::move(response));
  }
  // Done now, answered later: a client that dies meanwhile never learns what it did.
  state_->later(state_->options.latency, [respond, response = std::move(response)]() mutable { respond(std::move(response)); });
}

}  // namespace idempay::acquirer
