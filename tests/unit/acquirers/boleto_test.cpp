// Boleto bar codes and typeable lines: made for a due date and amount, read back from the line
// an acquirer shows, every check digit verified. The expected line below was worked out by
// hand from FEBRABAN's layout (bank 033, BRL, due 2026-12-10, 31.90), not by the code under test.
#include <gtest/gtest.h>

#include "idempay/acquirers/boleto.hpp"

namespace idempay::acquirer {
namespace {

constexpr const char* kBarcode = "03394165600000031909123456700000000012345101";
constexpr const char* kLine = "03399123475670000000500123451015416560000003190";
constexpr const char* kPrinted = "03399.12347 56700.000005 00123.451015 4 16560000003190";
constexpr int64_t kDue = 20'797;  // 2026-12-10, in days since 1970-01-01

TEST(BoletoTest, MadeForADueDateAndAnAmountAsTheStandardLaysItOut) {
  auto b = make_boleto("033", kDue, 3190, "9123456700000000012345101");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->barcode, kBarcode);
  EXPECT_EQ(b->line, kLine);
  EXPECT_EQ(b->line_formatted, kPrinted);
  EXPECT_FALSE(make_boleto("33", kDue, 3190, "9123456700000000012345101"));
  EXPECT_FALSE(make_boleto("033", kDue, 3190, "91234567"));
}

TEST(BoletoTest, ALineIsReadBackToItsBarCodeAndAnyWrongDigitIsRefused) {
  for (const char* shown : {kLine, kPrinted}) {
    auto b = boleto_from_line(shown);
    ASSERT_TRUE(b) << shown;
    EXPECT_EQ(b->barcode, kBarcode);
    EXPECT_EQ(b->line_formatted, kPrinted);
  }
  std::string line = kLine;
  for (size_t i = 0; i < line.size(); ++i) {
    std::string changed = line;
    changed[i] = changed[i] == '9' ? '0' : static_cast<char>(changed[i] + 1);
    auto b = boleto_from_line(changed);
    // A changed digit breaks a field's check digit (modulo 10) or the bar code's (modulo 11,
    // which alone covers the due factor and the amount; for this line it catches each change).
    EXPECT_FALSE(b) << "digit " << i;
  }
  EXPECT_FALSE(boleto_from_line(std::string(kLine).substr(1)));
  EXPECT_FALSE(boleto_from_line(std::string(kPrinted) + "\n"));
}

}  // namespace
}  // namespace idempay::acquirer
