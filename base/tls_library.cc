#include "base/tls_library.h"

#include <openssl/crypto.h>

namespace paratune {

void KeepTlsLibraryUntilExit() {
  // The first OPENSSL_init_crypto of the process decides whether the atexit handler is
  // registered; later ones (OPENSSL_init_ssl's included) leave it as it is.
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
}

}  // namespace paratune
