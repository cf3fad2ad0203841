// The bytes a trusted load balancer sends first (the PROXY protocol v2 header) and the
// --trusted-proxies list: whatever is accepted names a real IP address, and nothing reads
// past the header it announced.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "idempay/http/proxy_protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto length = idempay::http::proxy_v2_block_length(input);
  if (length && *length > idempay::http::kProxyV2MaxBlockBytes) {
    std::abort();
  }
  if (auto source = idempay::http::proxy_v2_source(input); source && !source->empty()) {
    unsigned char buffer[16];
    if (inet_pton(AF_INET, source->c_str(), buffer) != 1 && inet_pton(AF_INET6, source->c_str(), buffer) != 1) {
      std::abort();  // an address that is none
    }
  }
  if (auto networks = idempay::http::NetworkList::parse(input)) {
    (void)networks->contains("127.0.0.1");
    (void)networks->contains("::1");
  }
  return 0;
}
