// Every PPP answer the payment core gives, written by the PPP library's encoder, byte for byte, against tests/data/golden/ppp_answers.txt:
// Create Payment answers for each method family in each state, the operations' answers and
// refusals, and the errors. A change of one byte anywhere fails here, so that a refactoring
// of where answers are written cannot change what a gateway (or a replay of a stored answer)
// receives. IDEMPAY_UPDATE_GOLDEN=1 rewrites the file after a deliberate change.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "idempay/answers/answers.hpp"
#include "idempay/domain/payment_core.hpp"
#include "idempay/protocol/methods.hpp"

namespace idempay::domain {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

const answers::PppAnswers kEncoder;

CoreConfig golden_config() {
  CoreConfig c;
  c.answers = &kEncoder;
  c.fingerprint_key = "fingerprint-key";
  c.legacy_owner = "shop-a";
  c.public_url = "https://connector.example";
  c.pos_link_key = "pos-key";
  c.methods["Visa"].delay_to_auto_settle = 3600;
  c.methods["Visa"].delay_to_auto_settle_after_antifraud = 600;
  c.methods["Visa"].delay_to_cancel = 7200;
  return c;
}

PaymentRecord record_of(const std::string& method, PaymentState state) {
  PaymentRecord r;
  r.state = state;
  r.amounts.authorized = 3190;
  r.amounts.max_value = state == PaymentState::kApproved ? 3500 : 0;
  r.currency = "BRL";
  r.payment_method = method;
  r.owner = "shop-a";
  r.tid = "T0001";
  r.nsu = "NSU42";
  r.authorization_id = "AUTH9";
  r.acquirer = "golden-acquirer";
  r.document.payment_url = "https://acquirer.example/pay/1";
  r.document.pix_code = "00020126580014BR.GOV.BCB.PIX0136golden-pix-key5204000053039865802BR6304ABCD";
  r.document.pix_qr_png = "iVBORw0KGgoAAAANSUhEUg==";
  r.document.boleto_barcode = "23791234500000031901234567890123456789012345";
  r.document.boleto_line = "23791234567890123456789012345678901234500000031";
  r.document.boleto_line_formatted = "23791.23456 78901.234567 89012.345678 9 01234500000031";
  r.document.card_brand = "visa";
  r.document.first_digits = "444433";
  r.document.last_digits = "1111";
  return r;
}

// "name\tbody" lines, in a fixed order.
std::string all_answers() {
  const CoreConfig config = golden_config();
  std::ostringstream out;
  auto line = [&out](const std::string& name, const std::string& body) { out << name << '\t' << body << '\n'; };
  auto written = [](const std::optional<Reply>& reply) { return reply ? answers::body_of(*reply) : "-"; };

  const PaymentState states[] = {PaymentState::kProcessing, PaymentState::kUndefined, PaymentState::kApproved,
                                 PaymentState::kDenied,     PaymentState::kCancelled, PaymentState::kSettled,
                                 PaymentState::kRefunded,   PaymentState::kOrphaned};
  for (const char* method : {"Visa", "Elo", "Pix", "BankInvoice", "Promissories", "Venda Direta Credito"}) {
    for (auto state : states) {
      PaymentRecord r = record_of(method, state);
      std::string name = std::string("create ") + method + " " + std::string(to_string(state));
      line(name, create_response("pay-1", r, "0000", "golden message", config));
      if (ppp::is_pos(method)) {
        r.pos_phase = std::string(kIdentifyTerminal);
        line(name + " identify-terminal", create_response("pay-1", r, "", "", config));
        r.pos_phase = std::string(kAwaitPos);
        line(name + " await-pos", create_response("pay-1", r, "", "", config));
      }
    }
  }
  PaymentRecord challenged = record_of("Visa", PaymentState::kUndefined);
  line("create Visa challenge", create_response("pay-1", challenged, "3ds", "challenge", config));
  challenged.document.payment_url.clear();
  line("create Visa undefined without page", create_response("pay-1", challenged, "", "", config));
  PaymentRecord expiring = record_of("Pix", PaymentState::kUndefined);
  expiring.document.expires_in_seconds = 120;
  line("create Pix expiring early", create_response("pay-1", expiring, "", "", config));

  line("undefined", answers::body_of(undefined_answer("pay-1", config)));
  line("unknown payment", answers::body_of(unknown_payment("pay-1")));
  line("payment conflict", answers::body_of(payment_conflict("pay-1")));
  line("request conflict", answers::body_of(request_conflict("req-1")));
  line("no pos payment", answers::body_of(no_pos_payment("pay-1")));
  line("in progress elsewhere", answers::body_of(in_progress_elsewhere("pay-1")));
  for (auto code : {ErrorCode::kNotFound, ErrorCode::kInvalidArgument, ErrorCode::kConflict, ErrorCode::kIllegalState,
                    ErrorCode::kUnavailable, ErrorCode::kTimeout, ErrorCode::kInternal}) {
    line(std::string("error ") + to_string(code), answers::body_of(error_reply(Error{code, "golden detail"})));
  }

  for (auto kind : {ppp::OperationKind::kCancel, ppp::OperationKind::kSettle, ppp::OperationKind::kRefund}) {
    ppp::OperationRequest req;
    req.kind = kind;
    req.payment_id = "pay-1";
    req.request_id = "req-1";
    req.value = kind == ppp::OperationKind::kCancel ? 0 : 1000;
    std::string k(ppp::to_string(kind));
    line(k + " refusal", answers::body_of(operation_refusal(req, Refusal::kInvalidState, "golden refusal")));
    line(k + " request conflict", answers::body_of(operation_request_conflict(req)));
    // The acquirer's answers, as the core records them.
    PaymentState from = kind == ppp::OperationKind::kRefund ? PaymentState::kSettled : PaymentState::kApproved;
    Payment p{"pay-1", record_of("Visa", from), 7};
    p.record->amounts.settled = kind == ppp::OperationKind::kRefund ? 3190 : 0;
    std::string fingerprint = ppp::operation_fingerprint(config.fingerprint_key, req);
    Decision started = start_operation(p, OperationArrival{req, "shop-a", fingerprint},
                                       std::optional<StoredOperation>(), config, kNow);
    if (!started.operation) {
      line(k + " start", written(started.answer));
      continue;
    }
    for (int result = 0; result < 4; ++result) {
      domain::OperationOutcome o;
      o.succeeded = result == 0;
      o.id = "acq-op-1";
      o.amount = req.value;
      o.code = result == 0 ? "00" : "51";
      o.message = result == 0 ? "done" : "refused by the acquirer";
      o.pending = result == 2;
      o.manual = result == 3;
      Decision d = operation_done(p, *started.operation, o, config, kNow);
      line(k + " outcome " + std::to_string(result), written(d.answer));
    }
    Result<domain::OperationOutcome> timed_out = tl::unexpected(Error{ErrorCode::kTimeout, "acquirer timeout"});
    Decision failed = operation_done(p, *started.operation, timed_out, config, kNow);
    line(k + " acquirer failed", written(failed.answer));
  }
  // A cancel without the acquirer, in the states that have one.
  for (auto state : {PaymentState::kDenied, PaymentState::kCancelled, PaymentState::kSettled}) {
    ppp::OperationRequest req;
    req.kind = ppp::OperationKind::kCancel;
    req.payment_id = "pay-1";
    req.request_id = "req-2";
    Payment p{"pay-1", record_of("Visa", state), 7};
    std::string fingerprint = ppp::operation_fingerprint(config.fingerprint_key, req);
    Decision d = start_operation(p, OperationArrival{req, "shop-a", fingerprint}, std::optional<StoredOperation>(),
                                 config, kNow);
    line("cancel in " + std::string(to_string(state)), written(d.answer));
  }
  return out.str();
}

TEST(AnswersGoldenTest, EveryAnswerIsByteForByteThePinnedOne) {
  const std::string path = std::string(IDEMPAY_TESTDATA_DIR) + "/golden/ppp_answers.txt";
  std::string now = all_answers();
  if (const char* update = std::getenv("IDEMPAY_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << now;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing: run once with IDEMPAY_UPDATE_GOLDEN=1";
  std::string pinned((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream a(pinned), b(now);
  std::string want, got;
  for (int n = 1; std::getline(a, want) && std::getline(b, got); ++n) {
    ASSERT_EQ(got, want) << "answer " << n << " changed";
  }
  EXPECT_EQ(now.size(), pinned.size());
}

}  // namespace
}  // namespace idempay::domain
