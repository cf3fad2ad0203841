#include <gtest/gtest.h>

#include "idempay/base/crypto.hpp"
#include "idempay/protocol/methods.hpp"
#include "idempay/protocol/ppp.hpp"
#include "spec_examples.hpp"

namespace idempay::ppp {
namespace {

const char* kMinimal =
    R"({"paymentId":"P1","transactionId":"T1","reference":"R1","orderId":"O1","paymentMethod":"Visa",)"
    R"("value":31.9,"currency":"BRL","callbackUrl":"https://gw.example/cb?s=1",)"
    R"("card":{"holder":"Ann","number":"4444333322221111","csc":"123","expiration":{"month":"12","year":"2030"}}})";

Result<CreatePaymentRequest> parse(std::string body) { return parse_create_payment(body); }

TEST(PppParseTest, EverySpecCreatePaymentExampleParses) {
  auto examples = testing::create_payment_examples();
  ASSERT_GE(examples.size(), 10u);
  for (auto& [name, body] : examples) {
    auto r = parse(body);
    EXPECT_TRUE(r.has_value()) << name << ": " << (r ? "" : r.error().message);
  }
}

TEST(PppParseTest, SpecCardExampleFields) {
  auto r = parse(testing::create_payment_examples().at("Credit Card Success Approved"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->payment_id, "01693EB95BE443AC85874E395CD91565");
  EXPECT_EQ(r->payment_method, "Diners");
  EXPECT_EQ(r->value, 3190);
  EXPECT_EQ(r->currency, "BRL");
  EXPECT_EQ(r->installments, 1);
  EXPECT_EQ(r->callback_url, "https://api.mystore.example.com/some-path/to-notify/status-changes?an=mystore");
  EXPECT_EQ(r->inbound_request_url, "https://api.mystore.example.com/checkout/order/1072430428324/inbound-request/:action");
  EXPECT_EQ(r->card_summary.bin, "364901");
  EXPECT_EQ(r->card_summary.last4, "2661");
  EXPECT_EQ(r->card_summary.expiration_year, "2020");
}

TEST(PppParseTest, SpecOperationExamplesParse) {
  std::string settle = testing::schema_example("SettlePayment");
  auto s = parse_operation(OperationKind::kSettle, "F5C1A4E20D3B4E07B7E871F5B5BC9F91", settle);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->value, 4500);
  EXPECT_EQ(s->request_id, "2019-02-04T22:53:42-40000");
  std::string refund = testing::schema_example("RefundPayment");
  auto r = parse_operation(OperationKind::kRefund, "F5C1A4E20D3B4E07B7E871F5B5BC9F91", refund);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->value, 2000);
  EXPECT_EQ(r->settle_id, "Q5C1A4E20D3B4E07B7E871F5B5BC9F91");
  std::string cancel = testing::schema_property_examples("CancelPaymentRequest");
  auto c = parse_operation(OperationKind::kCancel, "F5C1A4E20D3B4E07B7E871F5B5BC9F91", cancel);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->request_id, "D12D9B80972C462980F5067A3A126837");
  EXPECT_EQ(c->value, 0);  // a cancellation's value is informational; it always voids all
}

// Recipients are read within their bounds whatever the method; whether they are a split (and
// must then add up) is the method's split mode's business, decided after parsing.
TEST(PppParseTest, RecipientsAreBoundedHereAndCheckedOnlyAsASplit) {
  std::string one = R"({"id":"r","role":"seller","amount":1})";
  std::string body = std::string(kMinimal).substr(0, std::string(kMinimal).size() - 1) +
                     R"(,"recipients":[)" + one + "]}";
  auto r = parse(body);
  ASSERT_TRUE(r) << r.error().message;  // 1.00 of 31.90: information, not a split yet
  EXPECT_FALSE(check_split(r->recipients, r->value));
  EXPECT_TRUE(check_split(r->recipients, 100));
  std::string many;
  for (int i = 0; i < 101; ++i) many += (i ? "," : "") + one;
  EXPECT_FALSE(parse(std::string(kMinimal).substr(0, std::string(kMinimal).size() - 1) + R"(,"recipients":[)" + many +
                     "]}"));
  EXPECT_FALSE(parse(std::string(kMinimal).substr(0, std::string(kMinimal).size() - 1) +
                     R"(,"recipients":[{"id":"r","amount":"a lot"}]})"));
  EXPECT_TRUE(splits_at(SplitMode::kOnAuthorize, SplitStep::kAuthorize));
  EXPECT_FALSE(splits_at(SplitMode::kOnCapture, SplitStep::kAuthorize));
  EXPECT_FALSE(splits_at(SplitMode::kDisabled, SplitStep::kRefund));
  EXPECT_TRUE(splits_at(SplitMode::kOnAuthorize, SplitStep::kRefund));
}

TEST(PppParseTest, DotSegmentsAreNoIdentifiers) {
  EXPECT_FALSE(is_valid_identifier("."));
  EXPECT_FALSE(is_valid_identifier(".."));
  EXPECT_TRUE(is_valid_identifier("..."));
  EXPECT_TRUE(is_valid_identifier("a.b:c"));
}

TEST(PppParseTest, SecretsStayOutOfTheSummary) {
  auto r = parse(kMinimal);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->card.number, "4444333322221111");
  EXPECT_EQ(r->card_summary.bin, "444433");
  EXPECT_EQ(r->card_summary.last4, "1111");
  EXPECT_EQ(r->card_summary.number_length, 16);
}

TEST(PppParseTest, EveryTruncationIsRejected) {
  std::string full = kMinimal;
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_FALSE(parse(full.substr(0, n)).has_value()) << "prefix of length " << n;
  }
}

TEST(PppParseTest, MalformedBodiesAreRejected) {
  for (const char* bad : {"", "[]", "null", "42", "\"x\"", "{", "{}}", "{\"paymentId\":}",
                          "{\"a\":1} trailing", "{\"a\":1}{\"b\":2}", "{'a':1}"}) {
    auto r = parse(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(PppParseTest, WronglyTypedFieldsAreNamed) {
  struct Case {
    std::string from;
    std::string to;
    std::string field;
  };
  std::vector<Case> cases = {
      {R"("paymentId":"P1")", R"("paymentId":1)", "paymentId"},
      {R"("value":31.9)", R"("value":{"a":1})", "value"},
      {R"("value":31.9)", R"("value":true)", "value"},
      {R"("value":31.9)", R"("value":-5)", "value"},
      {R"("value":31.9)", R"("value":31.999)", "value"},
      {R"("currency":"BRL")", R"("currency":["BRL"])", "currency"},
      {R"("currency":"BRL")", R"("currency":"brl")", "currency"},
      {R"("card":{)", R"("card":"x","c":{)", "card"},
      {R"("number":"4444333322221111")", R"("number":4444333322221111)", "card.number"},
      {R"("callbackUrl":"https://gw.example/cb?s=1")", R"("callbackUrl":"ftp://x")", "callbackUrl"},
      {R"("paymentId":"P1")", R"("paymentId":"P/1")", "paymentId"},
  };
  for (const auto& c : cases) {
    std::string body = kMinimal;
    auto pos = body.find(c.from);
    ASSERT_NE(pos, std::string::npos) << c.from;
    body.replace(pos, c.from.size(), c.to);
    auto r = parse(body);
    ASSERT_FALSE(r.has_value()) << body;
    EXPECT_NE(r.error().message.find(c.field), std::string::npos) << r.error().message;
  }
}

TEST(PppParseTest, MissingRequiredFieldsAreNamed) {
  for (const char* field : {"paymentId", "transactionId", "reference", "orderId", "paymentMethod",
                            "value", "currency", "callbackUrl"}) {
    std::string body = kMinimal;
    std::string key = std::string("\"") + field + "\":";
    auto pos = body.find(key);
    ASSERT_NE(pos, std::string::npos);
    body.replace(pos, key.size(), std::string("\"x") + field + "\":");
    auto r = parse(body);
    ASSERT_FALSE(r.has_value()) << field;
    EXPECT_NE(r.error().message.find(field), std::string::npos) << r.error().message;
  }
}

TEST(PppParseTest, OversizedBodyIsRejected) {
  std::string body = kMinimal;
  body.insert(1, "\"pad\":\"" + std::string(kMaxBodyBytes, 'x') + "\",");
  auto r = parse(body);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("too large"), std::string::npos);
}

TEST(PppParseTest, FieldNameVariantsAndLenientNumbers) {
  std::string body = kMinimal;
  body.pop_back();
  body += R"(,"inboundRequestsUrl":"https://x/inbound","sandBoxMode":true,"installments":"3"})";
  auto r = parse(body);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->inbound_request_url, "https://x/inbound");
  EXPECT_TRUE(r->sandbox);
  EXPECT_EQ(r->installments, 3);
  std::string comma = kMinimal;
  comma.replace(comma.find("31.9"), 4, "\"29,90\"");
  EXPECT_EQ(parse(comma)->value, 2990);
}

TEST(PppParseTest, CardTokensComeOnlyWithASecureProxy) {
  const std::string tokens =
      R"("card":{"holderToken":"#vtex#token#1#holder#","numberToken":"#vtex#token#2#number#",)"
      R"("cscToken":"#vtex#token#3#csc#","bin":"444433","numberLength":16,"expiration":{"month":"12","year":"2030"}})";
  std::string body = kMinimal;
  body = body.substr(0, body.find("\"card\"")) + tokens;
  auto proxied = parse(body.substr(0, body.size()) + R"(,"secureProxyUrl":"https://proxy.example/p"})");
  ASSERT_TRUE(proxied) << proxied.error().message;
  EXPECT_EQ(proxied->card.number_token, "#vtex#token#2#number#");
  EXPECT_TRUE(proxied->card.number.empty());
  EXPECT_EQ(proxied->card_summary.bin, "444433");
  EXPECT_EQ(proxied->card_summary.number_length, 16);
  auto unresolvable = parse(body + "}");
  ASSERT_FALSE(unresolvable);
  EXPECT_NE(unresolvable.error().message.find("secureProxyUrl"), std::string::npos);
  std::string both = kMinimal;
  both.replace(both.find("\"number\""), 0, R"("numberToken":"#vtex#token#2#number#",)");
  both.pop_back();
  EXPECT_FALSE(parse(both + R"(,"secureProxyUrl":"https://proxy.example/p"})"));
}

TEST(PppParseTest, OperationValidation) {
  std::string mismatched = R"({"paymentId":"OTHER","requestId":"R1","value":1})";
  EXPECT_FALSE(parse_operation(OperationKind::kSettle, "P1", mismatched));
  std::string no_request = R"({"paymentId":"P1","value":1})";
  EXPECT_FALSE(parse_operation(OperationKind::kSettle, "P1", no_request));
  std::string no_value = R"({"paymentId":"P1","requestId":"R1"})";
  EXPECT_FALSE(parse_operation(OperationKind::kRefund, "P1", no_value));
  std::string cancel = R"({"requestId":"R1"})";
  auto c = parse_operation(OperationKind::kCancel, "P1", cancel);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->payment_id, "P1");
}

TEST(PppParseTest, FingerprintsIgnoreCardSecretsButNotDefiningFields) {
  auto a = parse(kMinimal).value();
  auto b = a;
  b.card.csc = "999";
  b.card.holder = "Someone Else";
  b.transaction_id = "T2";
  EXPECT_EQ(payment_fingerprint("k", a), payment_fingerprint("k", b));
  b.value += 1;
  EXPECT_NE(payment_fingerprint("k", a), payment_fingerprint("k", b));
  EXPECT_NE(payment_fingerprint("k", a), payment_fingerprint("other key", a));
  EXPECT_EQ(payment_fingerprint("k", a).find("4444333322221111"), std::string::npos);
}

// With '|' between unescaped fields, orderId "A|B" + reference "C" read as orderId "A" +
// reference "B|C": a different payment would have replayed the first one's answer.
TEST(PppParseTest, ShiftedSeparatorsMakeDifferentFingerprints) {
  auto a = parse(kMinimal).value();
  auto b = a;
  a.order_id = "A|B";
  a.reference = "C";
  b.order_id = "A";
  b.reference = "B|C";
  EXPECT_NE(payment_fingerprint("k", a), payment_fingerprint("k", b));
  b.order_id = "A1:";  // a length prefix cannot be forged either
  b.reference = "C";
  a.order_id = "A";
  a.reference = "1:C";
  EXPECT_NE(payment_fingerprint("k", a), payment_fingerprint("k", b));
}

TEST(PppParseTest, PaymentsStoredWithVersion1FingerprintsStillMatch) {
  auto a = parse(kMinimal).value();
  std::string current = payment_fingerprint("k", a);
  EXPECT_EQ(current.rfind("v2:", 0), 0u);
  EXPECT_TRUE(same_payment("k", current, current, a));
  // What version 1 stored for this request: HMAC over the '|'-joined fields.
  std::string v1 = crypto::to_hex(crypto::hmac_sha256(
      "k", "payment/v1|" + std::to_string(a.value) + "|" + a.currency + "|" + a.payment_method + "|" + a.order_id +
               "|" + a.reference + "|" + a.card_summary.bin + "|" + a.card_summary.last4));
  EXPECT_TRUE(same_payment("k", v1, current, a));
  auto b = a;
  b.value += 1;
  EXPECT_FALSE(same_payment("k", v1, payment_fingerprint("k", b), b));
  EXPECT_FALSE(same_payment("k", current, payment_fingerprint("k", b), b));
}

// A refused field is named by its whole path, however deep (the path is spelled out only
// when a message needs it).
TEST(PppParseTest, ANestedFieldIsNamedByItsPath) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"miniCart":{"items":[{"quantity":1},{"quantity":0}]}})",
       "miniCart.items[1].quantity must be between 1 and 1000000"},
      {R"({"miniCart":{"items":[{"price":"x"}]}})",
       "miniCart.items[0].price must be a non-negative amount with at most 2 decimals"},
      {R"({"miniCart":{"shippingAddress":{"country":"BR"}}})",
       "miniCart.shippingAddress.country must be an ISO 3166 alpha-3 code such as BRA"},
      {R"({"miniCart":{"billingAddress":{"city":5}}})", "miniCart.billingAddress.city must be a string or null"},
      {R"({"miniCart":{"buyer":{"email":")" + std::string(255, 'e') + R"("}}})",
       "miniCart.buyer.email is longer than 254 characters"},
      {R"({"miniCart":{"shippingValue":true}})", "miniCart.shippingValue must be a number"},
      {R"({"recipients":[{"amount":1},{"amount":"1.001"}]})",
       "recipients[1].amount must be a non-negative amount with at most 2 decimals"},
      {R"({"merchantSettings":[{"name":"a","value":"b"},{"value":"c"}]})", "merchantSettings[1].name is required"},
      {R"({"card":{"expiration":{"month":12}}})", "card.expiration.month must be a string or null"},
      {R"({"installmentsValue":"ten"})", "installmentsValue must be a non-negative amount with at most 2 decimals"},
  };
  for (const auto& [body, message] : cases) {
    std::string text = body;
    auto r = parse_create_payment(text);
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().message, message) << body;
  }
  std::vector<Recipient> split(2);
  split[0] = {"seller-1", "", "", "", "seller", 100};
  split[1] = {"market", "", "", "", "boss", 100};
  auto refused = check_split(split, 200);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "recipients[1].role must be \"seller\" or \"marketplace\"");
}

TEST(PppParseTest, DuplicateMemberNamesAreRefused) {
  for (std::string body : {
           std::string(R"({"paymentId":"P1","paymentId":"P2"})"),
           std::string(R"({"card":{"number":"4444333322221111","number":"4444333322221112"}})"),
           std::string(R"({"value":1,"value":2})"),  // the same name, escaped
       }) {
    auto r = parse_create_payment(body);
    ASSERT_FALSE(r) << body;
    EXPECT_NE(r.error().message.find("twice"), std::string::npos) << r.error().message;
  }
  std::string many = "{";
  for (int i = 0; i < 60; ++i) many += "\"k" + std::to_string(i) + "\":1,";
  many += R"("k7":2})";  // past the inline table
  EXPECT_FALSE(parse_create_payment(many));
  // Names that share their length and their first, middle and last bytes land in the same
  // slot of the inline table: distinct ones are all accepted, a repeated one is still refused.
  std::string alike = "{";
  for (int i = 0; i < 40; ++i) alike += std::string("\"x") + char('a' + i % 26) + "-" + char('a' + i / 26) + "z\":1,";
  std::string distinct = alike + R"("paymentId":"P1"})";
  auto parsed = parse_create_payment(distinct);
  EXPECT_TRUE(parsed || parsed.error().message.find("twice") == std::string::npos) << parsed.error().message;
  alike += R"("xt-az":2})";
  auto repeated = parse_create_payment(alike);
  ASSERT_FALSE(repeated);
  EXPECT_NE(repeated.error().message.find("\"xt-az\" appears twice"), std::string::npos) << repeated.error().message;
  std::string op = R"({"requestId":"R1","requestId":"R2","value":1})";
  EXPECT_FALSE(parse_operation(OperationKind::kSettle, "P1", op));
}

}  // namespace
}  // namespace idempay::ppp
