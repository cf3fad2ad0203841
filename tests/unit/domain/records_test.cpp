// The stored records' encodings (one field table each, domain/src/fields.hpp): records written
// by the previous encoders read back with every field; payments are written in version 2
// (members at their default left out) and read back the same; operations and outbox entries
// are written again byte for byte; impossible values and newer versions are refused.
#include <gtest/gtest.h>

#include "idempay/domain/outbox.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::domain {
namespace {

// Exactly what the encoders of version 1 wrote for a POS payment.
constexpr std::string_view kStoredPayment =
    R"({"state":"approved","authorized":3190,"settled":1000,"refunded":500,"currency":"BRL",)"
    R"("paymentMethod":"Venda Direta Debito","orderId":"o-1","reference":"r-1","transactionId":"t-1",)"
    R"("merchant":"mystore","owner":"shop","acquirerRoute":"https://acq.example","fingerprint":"v2:abc",)"
    R"("callbackUrl":"https://gw.example/cb?a=1","card":{"bin":"444433","last4":"1111","length":16,)"
    R"("expMonth":"12","expYear":"2030"},"tid":"T1","nsu":"N1","authorizationId":"A1","acquirer":"stub",)"
    R"("response":"{\"status\":\"approved\"}","acquirerRevision":3,"callbacks":2,"document":{"paymentUrl":)"
    R"("https://pay.example/x","pixCode":"000201","pixQrPng":"iVBOR","boletoBarcode":"123",)"
    R"("boletoLine":"456","boletoLineFormatted":"4.5.6","expiresIn":900,"cardBrand":"visa",)"
    R"("firstDigits":"444433","lastDigits":"1111"},"posPhase":"await-pos","terminalSerial":"SN-9",)"
    R"("createdAt":1700000000000,"updatedAt":1700000000500})";

TEST(RecordsTest, APaymentStoredInVersionOneReadsTheSameAndIsWrittenInVersionTwo) {
  auto r = decode_payment(kStoredPayment);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->state, PaymentState::kApproved);
  EXPECT_EQ(r->amounts.authorized, 3190);
  EXPECT_EQ(r->amounts.settled, 1000);
  EXPECT_EQ(r->amounts.refunded, 500);
  EXPECT_EQ(r->card.number_length, 16);
  EXPECT_EQ(r->card.expiration_year, "2030");
  EXPECT_EQ(r->document.expires_in_seconds, 900);
  EXPECT_EQ(r->document.last_digits, "1111");
  EXPECT_EQ(r->response, R"({"status":"approved"})");
  EXPECT_EQ(r->terminal_serial, "SN-9");
  EXPECT_EQ(r->updated_at, 1700000000500);
  // Every member is set, so version 2 writes them all, after its version.
  std::string v2 = encode(*r);
  EXPECT_EQ(v2, R"({"v":2,)" + std::string(kStoredPayment.substr(1)));
  auto again = decode_payment(v2);
  ASSERT_TRUE(again);
  EXPECT_EQ(encode(*again), v2);
}

// A card payment's intent as version 1 wrote it (every member, empty or not), and the same
// record in version 2: a third shorter, and read back to the same record.
TEST(RecordsTest, VersionTwoLeavesOutDefaultsAndReadsBackTheSame) {
  constexpr std::string_view kIntentV1 =
      R"({"state":"processing","authorized":10000,"settled":0,"refunded":0,"currency":"BRL","paymentMethod":"Visa",)"
      R"("orderId":"O","reference":"R","transactionId":"T","merchant":"","owner":"shop","acquirerRoute":"",)"
      R"("fingerprint":"v2:4ded","callbackUrl":"https://gw.example/cb","card":{"bin":"444433","last4":"1111",)"
      R"("length":16,"expMonth":"","expYear":""},"tid":"","nsu":"","authorizationId":"","acquirer":"","response":"",)"
      R"("acquirerRevision":0,"callbacks":0,"document":{"paymentUrl":"","pixCode":"","pixQrPng":"","boletoBarcode":"",)"
      R"("boletoLine":"","boletoLineFormatted":"","expiresIn":0,"cardBrand":"","firstDigits":"","lastDigits":""},)"
      R"("posPhase":"","terminalSerial":"","createdAt":1796133849356,"updatedAt":1796133849356})";
  auto v1 = decode_payment(kIntentV1);
  ASSERT_TRUE(v1);
  std::string v2 = encode(*v1);
  EXPECT_EQ(v2,
            R"({"v":2,"state":"processing","authorized":10000,"currency":"BRL","paymentMethod":"Visa","orderId":"O",)"
            R"("reference":"R","transactionId":"T","owner":"shop","fingerprint":"v2:4ded",)"
            R"("callbackUrl":"https://gw.example/cb","card":{"bin":"444433","last4":"1111","length":16},)"
            R"("createdAt":1796133849356,"updatedAt":1796133849356})");
  EXPECT_LT(v2.size() * 3, kIntentV1.size() * 2);
  auto back = decode_payment(v2);
  ASSERT_TRUE(back);
  EXPECT_EQ(encode(*back), v2);
  EXPECT_EQ(back->state, PaymentState::kProcessing);
  EXPECT_EQ(back->amounts.settled, 0);
  EXPECT_EQ(back->card.number_length, 16);
  EXPECT_TRUE(back->document.payment_url.empty());
}

TEST(RecordsTest, APaymentOfANewerVersionIsRefusedNotMisread) {
  EXPECT_TRUE(decode_payment(R"({"v":2,"state":"approved"})"));
  EXPECT_FALSE(decode_payment(R"({"v":3,"state":"approved"})"));
}

TEST(RecordsTest, APaymentStoredBeforeOwnersAndDocumentsReadsWithDefaults) {
  auto r = decode_payment(R"({"state":"denied","authorized":100,"response":"x"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, PaymentState::kDenied);
  EXPECT_TRUE(r->owner.empty());
  EXPECT_TRUE(r->document.payment_url.empty());
  EXPECT_EQ(r->card.number_length, 0);
}

TEST(RecordsTest, UnknownStatesAndKindsAreRefused) {
  EXPECT_FALSE(decode_payment(R"({"state":"teleported"})"));
  EXPECT_FALSE(decode_payment(R"({"authorized":1})"));
  EXPECT_FALSE(decode_operation(R"({"kind":"chargeback","phase":"done"})"));
  EXPECT_FALSE(decode_payment("not json"));
}

TEST(RecordsTest, OperationsWithAndWithoutTheirAcquirerKeyRead) {
  constexpr std::string_view kLegacy =
      R"({"kind":"settlement","phase":"done","paymentId":"p1","fingerprint":"v1:f","amount":1000,)"
      R"("httpStatus":200,"response":"{\"settleId\":\"s\"}","updatedAt":5})";
  constexpr std::string_view kScoped =
      R"({"kind":"refund","phase":"processing","paymentId":"p1","fingerprint":"v2:f","acquirerKey":"p1/r1",)"
      R"("amount":250,"httpStatus":0,"response":"","updatedAt":6})";
  auto legacy = decode_operation(kLegacy);
  ASSERT_TRUE(legacy);
  EXPECT_EQ(legacy->kind, ppp::OperationKind::kSettle);
  EXPECT_EQ(legacy->phase, OperationPhase::kDone);
  EXPECT_TRUE(legacy->acquirer_key.empty());
  EXPECT_EQ(legacy->outcome, Outcome::kDone);  // stored as the HTTP status it was sent with
  // Written back in the current form: a successful outcome is the default, not written.
  EXPECT_EQ(encode(*legacy), R"({"kind":"settlement","phase":"done","paymentId":"p1","fingerprint":"v1:f","amount":1000,)"
                             R"("response":"{\"settleId\":\"s\"}","updatedAt":5})");
  for (auto [status, outcome] : {std::pair{500, Outcome::kFailed}, std::pair{501, Outcome::kManual}}) {
    std::string old(kLegacy);
    old.replace(old.find("200"), 3, std::to_string(status));
    auto read = decode_operation(old);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->outcome, outcome);
    auto again = decode_operation(encode(*read));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->outcome, outcome) << encode(*read);
  }
  auto scoped = decode_operation(kScoped);
  ASSERT_TRUE(scoped);
  EXPECT_EQ(scoped->kind, ppp::OperationKind::kRefund);
  EXPECT_EQ(scoped->phase, OperationPhase::kProcessing);
  EXPECT_EQ(scoped->acquirer_key, "p1/r1");
  EXPECT_EQ(scoped->amount, 250);
  std::string current(kScoped);
  current.erase(current.find(R"("httpStatus":0,)"), 15);  // in flight: no outcome yet
  EXPECT_EQ(encode(*scoped), current);
}

TEST(RecordsTest, OutboxEntriesWriteBackByteForByteAndNeedAnIdAndAUrl) {
  constexpr std::string_view kStored =
      R"({"id":"p1.1","paymentId":"p1","merchant":"shop","url":"https://gw.example/cb","body":"{}",)"
      R"("attempts":3,"createdAt":10,"nextAttemptAt":20,"lastStatus":503,"lastError":"busy","deadReason":""})";
  auto e = decode_outbox(kStored);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->attempts, 3);
  EXPECT_EQ(e->last_status, 503u);
  EXPECT_EQ(encode(*e), kStored);
  EXPECT_FALSE(decode_outbox(R"({"id":"","url":"https://x"})"));
  EXPECT_FALSE(decode_outbox(R"({"id":"a"})"));
}

}  // namespace
}  // namespace idempay::domain
