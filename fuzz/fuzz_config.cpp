// The configuration files an operator writes: the merchants file (with every acquirer kind's
// entries) and the manifest file. The first byte picks which; the rest is the file's content.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "idempay/acquirers/kinds.hpp"
#include "idempay/config/manifest.hpp"
#include "idempay/config/merchants.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  static const std::string path = "/tmp/idempay-fuzz-config-" + std::to_string(getpid()) + ".json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data) + 1, static_cast<std::streamsize>(size - 1));
  }
  if (data[0] % 2 == 0) {
    (void)idempay::config::load_merchant_file(path, idempay::acquirer::acquirer_kinds());
  } else {
    (void)idempay::config::load_manifest(path);
  }
  return 0;
}
