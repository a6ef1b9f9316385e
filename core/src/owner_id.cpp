// A caller-given owner id becomes the first half of the owner field: the name-based UUID
// (RFC 4122 version 5, SHA-1) of the id in rlock's own namespace. Any process can compute it
// (Python: uuid.uuid5(uuid.UUID(kOwnerIdNamespace), id)), and it looks like any client id to
// Redisson and to every rlock tool.
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>

#include "rlock/core/names.hpp"

namespace rlock::core {
namespace {

using Digest = std::array<uint8_t, 20>;

uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void sha1_block(const uint8_t* block, std::array<uint32_t, 5>& h) {
  std::array<uint32_t, 80> w{};
  for (size_t i = 0; i < 16; i++) {
    const uint8_t* word = block + 4 * i;
    w[i] = uint32_t{word[0]} << 24 | uint32_t{word[1]} << 16 | uint32_t{word[2]} << 8 |
           uint32_t{word[3]};
  }
  for (size_t i = 16; i < 80; i++) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f = 0, k = 0;
    if (i < 20) {
      f = (b & c) | (~b & d), k = 0x5A827999;
    } else if (i < 40) {
      f = b ^ c ^ d, k = 0x6ED9EBA1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
    } else {
      f = b ^ c ^ d, k = 0xCA62C1D6;
    }
    uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rotl(b, 30), b = a, a = t;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

Digest sha1(const std::string& data) {
  std::array<uint32_t, 5> h{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::string padded = data;
  padded.push_back(static_cast<char>(0x80));
  while (padded.size() % 64 != 56) padded.push_back('\0');
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  for (int i = 7; i >= 0; i--) padded.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  for (size_t at = 0; at < padded.size(); at += 64) {
    sha1_block(reinterpret_cast<const uint8_t*>(padded.data()) + at, h);
  }
  Digest out{};
  for (int i = 0; i < 20; i++) out[i] = static_cast<uint8_t>(h[i / 4] >> (24 - 8 * (i % 4)));
  return out;
}

std::string uuid_bytes(const char* text) {
  std::string bytes;
  for (const char* p = text; *p != '\0' && p[1] != '\0'; p++) {
    if (*p == '-') continue;
    unsigned value = 0;
    std::sscanf(p, "%2x", &value);
    bytes.push_back(static_cast<char>(value));
    p++;
  }
  return bytes;
}

}  // namespace

std::string owner_id_prefix(const std::string& owner_id) {
  Digest d = sha1(uuid_bytes(kOwnerIdNamespace) + owner_id);
  d[6] = static_cast<uint8_t>((d[6] & 0x0f) | 0x50);  // version 5
  d[8] = static_cast<uint8_t>((d[8] & 0x3f) | 0x80);  // the RFC 4122 variant
  std::string text;
  char hex[3];
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    std::snprintf(hex, sizeof hex, "%02x", d[i]);
    text += hex;
  }
  return text;
}

}  // namespace rlock::core
