// Outside text shown on a log line or a terminal: every control that could forge a line, drive
// a terminal or reorder what a reader sees becomes a visible escape; text stays text.
#include <gtest/gtest.h>

#include "idempay/base/visible_text.hpp"

namespace idempay {
namespace {

const std::string kCsi = "\xc2\x9b";      // U+009B, a CSI to terminals that take 8-bit controls
const std::string kRlo = "\xe2\x80\xae";  // U+202E RIGHT-TO-LEFT OVERRIDE
const std::string kLoneCsi = "\x9b";      // the same control as one byte: not UTF-8

TEST(VisibleTextTest, ControlsBecomeVisibleEscapesAndTextStaysAsItIs) {
  EXPECT_EQ(visible("plain text, 31.90 BRL"), "plain text, 31.90 BRL");
  EXPECT_EQ(visible("pagamento à vista, 日本"), "pagamento à vista, 日本") << "UTF-8 text is text";
  EXPECT_EQ(visible("a\nb\r\tc"), "a\\nb\\r\\tc");
  EXPECT_EQ(visible("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(visible(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(visible("del\x7f"), "del\\x7f");
  EXPECT_EQ(visible("c1 " + kCsi + "2J"), "c1 \\u009b2J");
  EXPECT_EQ(visible("\xc2\x85"), "\\u0085");
  EXPECT_EQ(visible(kRlo + "evil"), "\\u202eevil");
  EXPECT_EQ(visible("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
  EXPECT_EQ(visible(kLoneCsi + "2J"), "\\x9b2J");
  EXPECT_EQ(visible("\xc0\x8a"), "\\xc0\\x8a") << "an overlong line feed";
  EXPECT_EQ(visible("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate";
  EXPECT_EQ(visible("\xe2\x80"), "\\xe2\\x80") << "a truncated sequence";
  EXPECT_EQ(visible("\\x1b"), "\\\\x1b") << "an escape cannot be forged";
}

TEST(VisibleTextTest, PlainTextIsWhatNeedsNoEscape) {
  EXPECT_TRUE(is_plain_text("reembolso à cliente\tpedido 7"));
  EXPECT_FALSE(is_plain_text("tab\there", false));
  for (std::string bad : {std::string("a\nb"), std::string("\x1b[31m"), std::string("\x7f"), kCsi, kRlo,
                          std::string("\xe2\x81\xa7"), std::string("\xff"), std::string("\xd8\x9c")}) {
    EXPECT_FALSE(is_plain_text(bad)) << visible(bad);
  }
}

TEST(VisibleTextTest, JsonKeepsItsMeaningAndLosesEveryTerminalControl) {
  EXPECT_EQ(terminal_safe_json(R"({"a":"x\u001b[2J","b":"à"})"), R"({"a":"x\u001b[2J","b":"à"})");
  EXPECT_EQ(terminal_safe_json("{\"a\":\"" + kCsi + "2J" + kRlo + "\x7f\"}"),
            R"({"a":"\u009b2J\u202e\u007f"})");
  EXPECT_EQ(terminal_safe_json("{\"a\":\"" + kLoneCsi + "\"}"), R"({"a":"\ufffd"})") << "not UTF-8";
}

}  // namespace
}  // namespace idempay
