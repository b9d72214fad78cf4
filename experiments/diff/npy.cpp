#include "diff/npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hydragen::diff {

namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMaxHeaderLen = std::size_t{1} << 20;  // far above anything NumPy writes
constexpr std::size_t kMaxDims = 32;                           // NumPy's own limit is 64

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(".npy: " + why); }

// A printable excerpt of header text for messages (no control bytes, bounded length).
std::string excerpt(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) out += (c >= 32 && c < 127) ? c : '?';
  if (text.size() > 40) out += "...";
  return out;
}

// The header dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  void parse() {
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') { ++pos_; break; }
      const std::string key = string_literal();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (descr) fail("header repeats 'descr'");
        descr = string_literal();
      } else if (key == "fortran_order") {
        if (fortran_order) fail("header repeats 'fortran_order'");
        fortran_order = boolean();
      } else if (key == "shape") {
        if (shape) fail("header repeats 'shape'");
        shape = tuple();
      } else {
        fail("header has an unknown key '" + excerpt(key) + "'");
      }
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == '}') { ++pos_; break; }
      fail("header: expected ',' or '}' at offset " + std::to_string(pos_));
    }
    skip_space();
    if (pos_ != text_.size()) fail("header has text after the dict: '" + excerpt(text_.substr(pos_)) + "'");
    if (!descr) fail("header has no 'descr'");
    if (!fortran_order) fail("header has no 'fortran_order'");
    if (!shape) fail("header has no 'shape'");
  }

  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<std::size_t>> shape;

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("header: expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) ++pos_;
  }
  std::string string_literal() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("header: expected a quoted string at offset " + std::to_string(pos_));
    ++pos_;
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("header: unterminated string at offset " + std::to_string(pos_ - 1));
    std::string out(text_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) fail("header: escapes in strings are not supported");
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    if (text_.substr(pos_, 4) == "True") { pos_ += 4; return true; }
    if (text_.substr(pos_, 5) == "False") { pos_ += 5; return false; }
    fail("header: 'fortran_order' must be True or False, got '" + excerpt(text_.substr(pos_, 8)) + "'");
  }
  std::vector<std::size_t> tuple() {
    expect('(');
    std::vector<std::size_t> dims;
    for (;;) {
      skip_space();
      if (peek() == ')') { ++pos_; break; }
      if (peek() < '0' || peek() > '9') {
        fail("header: shape entry " + std::to_string(dims.size()) + " is not a non-negative integer ('" +
             excerpt(text_.substr(pos_, 8)) + "')");
      }
      std::size_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        const auto digit = static_cast<std::size_t>(peek() - '0');
        if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail("header: shape entry overflows");
        value = value * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      if (dims.size() == kMaxDims) fail("header: shape has more than " + std::to_string(kMaxDims) + " dimensions");
      dims.push_back(value);
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == ')') { ++pos_; break; }
      fail("header: expected ',' or ')' in shape at offset " + std::to_string(pos_));
    }
    return dims;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

DType dtype_from_descr(const std::string& descr) {
  if (descr == "<f2") return DType::fp16;
  if (descr == "<f4") return DType::fp32;
  if (descr == "<f8") return DType::fp64;
  if (descr == "<u2" || descr == "<V2" || descr == "|V2" || descr == "bfloat16") return DType::bf16;
  if (!descr.empty() && descr[0] == '>') fail("big-endian descr '" + excerpt(descr) + "' is not supported (little-endian only)");
  fail("descr '" + excerpt(descr) + "' is not supported (expected '<f2' fp16, '<f4' fp32, '<f8' fp64, '<u2', '<V2' or 'bfloat16' bf16 bits)");
}

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::fp16: return "<f2";
    case DType::fp32: return "<f4";
    case DType::fp64: return "<f8";
    case DType::bf16: return "<u2";
  }
  return "?";
}

std::size_t checked_count(const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (std::size_t d : shape) {
    if (d != 0 && count > std::numeric_limits<std::size_t>::max() / d) fail("shape " + NpyArray{DType::fp64, shape, {}}.shape_text() + " overflows");
    count *= d;
  }
  return count;
}

}  // namespace

std::size_t NpyArray::count() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

std::vector<double> NpyArray::values() const { return decode_values(data.data(), count(), dtype); }

std::string NpyArray::shape_text() const {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

NpyArray parse_npy(const std::byte* bytes, std::size_t size) {
  if (size < 8) fail("file is " + std::to_string(size) + " bytes, shorter than the magic and version");
  if (std::memcmp(bytes, kMagic, sizeof kMagic) != 0) fail("bad magic (not a .npy file)");
  const auto major = static_cast<unsigned>(bytes[6]);
  const auto minor = static_cast<unsigned>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    fail("format version " + std::to_string(major) + "." + std::to_string(minor) + " is not supported (1.0, 2.0, 3.0)");
  }
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (size < 8 + len_bytes) fail("file ends inside the header length");
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) header_len |= static_cast<std::size_t>(bytes[8 + i]) << (8 * i);
  const std::size_t header_start = 8 + len_bytes;
  if (header_len > kMaxHeaderLen) fail("header length " + std::to_string(header_len) + " is absurd");
  if (header_len > size - header_start) {
    fail("truncated header: needs " + std::to_string(header_len) + " bytes, file has " +
         std::to_string(size - header_start) + " after the header length");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes + header_start), header_len);
  HeaderParser parser(header);
  parser.parse();
  if (*parser.fortran_order) fail("fortran_order True is not supported (save a C-ordered array)");

  NpyArray array;
  array.dtype = dtype_from_descr(*parser.descr);
  array.shape = *parser.shape;
  const std::size_t count = checked_count(array.shape);
  const std::size_t item = dtype_size(array.dtype);
  if (count > std::numeric_limits<std::size_t>::max() / item) fail("shape " + array.shape_text() + " overflows");
  const std::size_t data_bytes = count * item;
  const std::size_t data_start = header_start + header_len;
  const std::size_t available = size - data_start;
  if (available < data_bytes) {
    fail("truncated data: shape " + array.shape_text() + " " + std::string(*parser.descr) + " needs " +
         std::to_string(data_bytes) + " bytes, file has " + std::to_string(available));
  }
  if (available > data_bytes) {
    fail(std::to_string(available - data_bytes) + " trailing bytes after the data of shape " + array.shape_text());
  }
  array.data.assign(bytes + data_start, bytes + data_start + data_bytes);
  return array;
}

NpyArray parse_npy(const std::vector<std::byte>& bytes) { return parse_npy(bytes.data(), bytes.size()); }

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open");
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::invalid_argument(path + ": read error");
  try {
    return parse_npy(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

std::vector<std::byte> format_npy(DType dtype, const std::vector<std::size_t>& shape, const std::vector<double>& values) {
  NpyArray probe{dtype, shape, {}};
  if (checked_count(shape) != values.size()) {
    throw std::invalid_argument("format_npy: " + std::to_string(values.size()) + " values for shape " + probe.shape_text());
  }
  std::string header = std::string("{'descr': '") + descr_of(dtype) + "', 'fortran_order': False, 'shape': " +
                       probe.shape_text() + ", }";
  // Pad with spaces so that magic + version + length + header (ending in '\n') is a multiple of 64.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  const std::size_t total = ((prefix + header.size() + 1 + 63) / 64) * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::vector<std::byte> out;
  out.reserve(total + values.size() * dtype_size(dtype));
  for (unsigned char c : kMagic) out.push_back(static_cast<std::byte>(c));
  out.push_back(static_cast<std::byte>(v2 ? 2 : 1));
  out.push_back(std::byte{0});
  for (std::size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  const std::vector<std::byte> data = encode(values, dtype);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_npy(const std::string& path, DType dtype, const std::vector<std::size_t>& shape,
               const std::vector<double>& values) {
  const std::vector<std::byte> bytes = format_npy(dtype, shape, values);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace hydragen::diff
