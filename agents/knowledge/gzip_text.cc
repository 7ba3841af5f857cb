#include "agents/knowledge/gzip_text.h"

#include <zlib.h>

namespace paratune {

bool IsGzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

Result<std::string> Gunzip(const std::string& data, size_t max_bytes) {
  z_stream zs{};
  // 15 window bits + 32: detect gzip or zlib headers automatically.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Status::Internal("gzip: inflateInit failed");
  std::string out;
  char buf[1 << 16];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&zs);
      return Status::Invalid("gzip: inflated data exceeds " + std::to_string(max_bytes) + " bytes");
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
    }
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return Status::Invalid("gzip: corrupt or truncated data (zlib error " + std::to_string(rc) +
                           ")");
  }
  return out;
}

}  // namespace paratune
