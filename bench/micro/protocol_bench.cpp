// Micro-benchmarks of the request path's pure steps (Google Benchmark).
#include <benchmark/benchmark.h>

#include "idempay/acquirers/brcode.hpp"
#include "idempay/answers/answers.hpp"
#include "idempay/protocol/ppp.hpp"
#include "idempay/base/webhooks.hpp"

namespace {

const std::string kCreateBody =
    R"({"reference":"618272","orderId":"1072430428324","shopperInteraction":"ecommerce",)"
    R"("transactionId":"2F023FD5A72A49D48A8633252B7CCBD6","paymentId":"01693EB95BE443AC85874E395CD91565",)"
    R"("paymentMethod":"Visa","paymentMethodCustomCode":null,"merchantName":"mystore",)"
    R"("card":{"holder":"John Doe","number":"4444333322221111","csc":"123","expiration":{"month":"12","year":"2030"}},)"
    R"("value":31.9,"referenceValue":31.9,"currency":"BRL","installments":1,"deviceFingerprint":"75076388",)"
    R"("ipAddress":"187.105.111.65","miniCart":{"buyer":{"firstName":"John","lastName":"Doe","document":"01234567890",)"
    R"("email":"john.doe@example.com","phone":"+5521999999999"},"shippingAddress":{"country":"BRA","street":"Praia",)"
    R"("number":"300","neighborhood":"Botafogo","postalCode":"22250040","city":"Rio de Janeiro","state":"RJ"},)"
    R"("items":[{"id":"8","name":"Tenis","price":30.9,"quantity":1,"discount":0}],"shippingValue":1,"taxValue":0},)"
    R"("url":"https://admin.example/orders?q=1072430428324","callbackUrl":"https://api.example/notify?an=mystore",)"
    R"("returnUrl":"https://shop.example/checkout/order/1072430428324"})";

void BM_ParseCreatePayment(benchmark::State& state) {
  for (auto _ : state) {
    std::string body = kCreateBody;
    auto r = idempay::ppp::parse_create_payment(body);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kCreateBody.size()));
}
BENCHMARK(BM_ParseCreatePayment);

void BM_WriteCreatePaymentResponse(benchmark::State& state) {
  idempay::domain::PaymentAnswer r;
  r.payment_id = "01693EB95BE443AC85874E395CD91565";
  r.status = "approved";
  r.authorization_id = "329885";
  r.tid = "Taca5e384146459d";
  r.nsu = "05538278";
  r.acquirer = "idempay-stub";
  r.code = "0000";
  r.message = "approved";
  for (auto _ : state) {
    benchmark::DoNotOptimize(idempay::answers::write_payment(r));
  }
}
BENCHMARK(BM_WriteCreatePaymentResponse);

void BM_PaymentFingerprint(benchmark::State& state) {
  std::string body = kCreateBody;
  auto request = idempay::ppp::parse_create_payment(body).value();
  const std::string key(32, 'k');
  for (auto _ : state) {
    benchmark::DoNotOptimize(idempay::ppp::payment_fingerprint(key, request));
  }
}
BENCHMARK(BM_PaymentFingerprint);

void BM_WebhookVerify(benchmark::State& state) {
  const std::string key(32, 's');
  const std::string body(static_cast<size_t>(state.range(0)), 'x');
  const int64_t now = 1'800'000'000;
  const std::string signature = idempay::webhooks::sign(key, "evt_1", now, body);
  const std::vector<std::string> keys{key};
  for (auto _ : state) {
    benchmark::DoNotOptimize(idempay::webhooks::verify(keys, "evt_1", "1800000000", signature, body, now));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_WebhookVerify)->Arg(300)->Arg(4096);

// A dynamic Pix code's QR image, as a Pix Create Payment answers it (API Pix adapter, stub).
void BM_PixQrImage(benchmark::State& state) {
  const std::string code = idempay::acquirer::dynamic_pix_code(
      "pix.psp.example/qr/v2/cobv/9d36b84fc70b478fb95c12729b90ca25", "mystore", "RIO DE JANEIRO");
  for (auto _ : state) {
    benchmark::DoNotOptimize(idempay::acquirer::qr_png_base64(code));
  }
}
BENCHMARK(BM_PixQrImage);

}  // namespace

BENCHMARK_MAIN();
