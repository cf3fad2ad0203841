// The tools' side of the API Pix: registering where the PSP sends its notifications.
#include <future>

#include "documents.hpp"
#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/base/json_writer.hpp"
#include "token_source.hpp"

namespace idempay::acquirer {

namespace {


// One call to /webhook/{chave} with a fresh token, waited for.
Result<http::ClientResponse> webhook_call(const BcbPixOptions& options, std::string method, std::string body) {
  http::Client client(options.tls);
  TokenSource tokens(client, options);
  std::promise<Result<http::ClientResponse>> answered;
  tokens.get([&](Result<std::string> token) {
    if (!token) {
      return answered.set_value(tl::unexpected(token.error()));
    }
    http::OutboundRequest r;
    r.method = method;
    r.url = options.base_url + "/webhook/" + http::percent_encoded(options.pix_key);
    r.headers = {{"authorization", "Bearer " + *token}, {"accept", "application/json"}};
    if (!body.empty()) {
      r.headers.push_back({"content-type", "application/json"});
    }
    r.body = body;
    r.connect_timeout = options.timeout;
    r.total_timeout = options.timeout;
    r.allow_private = true;
    client.send(std::move(r), [&](Result<http::ClientResponse> answer) { answered.set_value(std::move(answer)); });
  });
  return answered.get_future().get();
}

Status expect(const Result<http::ClientResponse>& r, std::initializer_list<unsigned> ok, std::string_view what) {
  if (!r) {
    return tl::unexpected(r.error());
  }
  if (std::find(ok.begin(), ok.end(), r->status) == ok.end()) {
    return make_error(ErrorCode::kUnavailable, std::string(what) + ": HTTP " + std::to_string(r->status) + ": " +
                                                   pix::problem_text(r->status, r->body));
  }
  return {};
}

}  // namespace

Status register_pix_webhook(const BcbPixOptions& options, const std::string& url) {
  JsonWriter w;
  w.begin_object().key("webhookUrl").string(url).end_object();
  return expect(webhook_call(options, "PUT", std::move(w).take()), {200, 201, 204}, "PUT /webhook");
}

Result<std::string> show_pix_webhook(const BcbPixOptions& options) {
  auto r = webhook_call(options, "GET", "");
  if (auto ok = expect(r, {200}, "GET /webhook"); !ok) {
    return tl::unexpected(ok.error());
  }
  return r->body;
}

Status delete_pix_webhook(const BcbPixOptions& options) {
  return expect(webhook_call(options, "DELETE", ""), {200, 204}, "DELETE /webhook");
}

}  // namespace idempay::acquirer
