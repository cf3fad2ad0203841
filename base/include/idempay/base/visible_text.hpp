#pragma once
// Text from outside (a PSP's notification, a request's header, whatever a store holds) shown on
// one line of a log or a terminal. Such text is data: a line break must not start a forged log
// line, and an escape sequence must not drive the terminal that prints it. Besides the C0
// controls and DEL, that means the C1 controls (U+0080-U+009F: U+009B is a CSI to terminals
// that take 8-bit controls), the bidirectional formatting characters (which reorder what a
// reader sees, as in "Trojan Source"), and bytes that are not UTF-8.
#include <string>
#include <string_view>

namespace idempay {

/// Appends `text` with every such character made a visible escape: \n, \r and \t, \xHH for any
/// other C0 control, DEL and any byte that is not part of valid UTF-8, \uHHHH for a C1 control
/// or a bidirectional formatting character; a backslash is doubled, so that no escape can be
/// forged. Everything else (printable ASCII and UTF-8 text) is copied as it is.
void append_visible(std::string& out, std::string_view text);
std::string visible(std::string_view text);

/// True if `text` holds none of those characters (a tab allowed when `tab`): operator text
/// that goes into the audit trail must be plain (the operator API refuses anything else).
bool is_plain_text(std::string_view text, bool tab = true);

/// JSON (as JsonWriter writes it: C0 controls already escaped) with the C1 controls, DEL and
/// the bidirectional formatting characters its strings hold written as \uHHHH escapes, and any
/// byte that is not UTF-8 as \ufffd: the same document for a JSON reader, safe on a terminal.
std::string terminal_safe_json(std::string_view json);

}  // namespace idempay
