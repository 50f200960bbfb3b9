#include "engine/onnx_io.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/files.h"

namespace opscope::engine {

StatusOr<DataType> FromOnnxType(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
      return DataType::kFloat32;
    case onnx::TensorProto::INT64:
      return DataType::kInt64;
    case onnx::TensorProto::INT32:
      return DataType::kInt32;
    case onnx::TensorProto::BOOL:
      return DataType::kBool;
    case onnx::TensorProto::UINT8:
      return DataType::kUint8;
    case onnx::TensorProto::INT8:
      return DataType::kInt8;
    case onnx::TensorProto::DOUBLE:
      return DataType::kFloat64;
    case onnx::TensorProto::FLOAT16:
      return DataType::kFloat16;
    default:
      break;
  }
  const auto* d = onnx::TensorProto::DataType_descriptor();
  const auto* v = d->FindValueByNumber(t);
  return Unsupported(std::string("tensor data type ") + (v ? v->name() : std::to_string(t)) +
                     " is not supported by the engine");
}

int ToOnnxType(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return onnx::TensorProto::FLOAT;
    case DataType::kInt64:
      return onnx::TensorProto::INT64;
    case DataType::kInt32:
      return onnx::TensorProto::INT32;
    case DataType::kBool:
      return onnx::TensorProto::BOOL;
    case DataType::kUint8:
      return onnx::TensorProto::UINT8;
    case DataType::kInt8:
      return onnx::TensorProto::INT8;
    case DataType::kFloat64:
      return onnx::TensorProto::DOUBLE;
    case DataType::kFloat16:
      return onnx::TensorProto::FLOAT16;
  }
  return onnx::TensorProto::UNDEFINED;
}

static constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;  // 64 GiB: beyond is surely corrupt

namespace {

namespace fs = std::filesystem;

// A non-negative decimal integer, the whole string.
bool ParseOffset(const std::string& s, int64_t* v) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *v);
  return ec == std::errc() && ptr == end && !s.empty() && *v >= 0;
}

// True when `p` lies below `dir` (both canonical: absolute, no "..", no trailing separator).
bool IsBelow(const fs::path& p, const fs::path& dir) {
  auto [d, q] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
  return d == dir.end() && q != p.end();
}

}  // namespace

StatusOr<ExternalData> ResolveExternalData(const onnx::TensorProto& p, const std::string& model_dir,
                                           const std::string& what) {
  ExternalData ext;
  std::string location;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t* field = kv.key() == "offset" ? &ext.offset : &ext.length;
      if (!ParseOffset(kv.value(), field))
        return DataLoss(what + ": external data " + kv.key() + " '" + kv.value() +
                        "' is not a non-negative integer");
    }
  }
  if (location.empty()) return DataLoss(what + ": external data without a location");
  const std::string dir_name = model_dir.empty() ? "." : model_dir;
  // Shown with a NUL written out: a raw one would cut the message where it is printed.
  std::string shown;
  for (char c : location) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
  auto refuse = [&](const std::string& why) {
    return InvalidArgument(what + ": external data location '" + shown + "' " + why +
                           "; it must be a relative path to a file inside the model's folder '" +
                           dir_name + "'");
  };
  if (location.find('\0') != std::string::npos) return refuse("contains a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name()) return refuse("is an absolute path");
  fs::path norm = rel.lexically_normal();
  if (!norm.empty() && *norm.begin() == "..") return refuse("leads out of the model's folder");
  std::error_code ec;
  fs::path dir = fs::canonical(dir_name, ec);
  if (ec)
    return NotFound(what + ": cannot resolve the model's folder '" + dir_name +
                    "': " + ec.message());
  fs::path joined = dir / rel;
  // canonical() follows every symlink, so a link inside the folder that points outside is caught.
  fs::path real = fs::canonical(joined, ec);
  if (ec) return NotFound(what + ": external data file '" + joined.string() + "' is missing");
  if (!IsBelow(real, dir))
    return refuse("resolves (through a symbolic link) to '" + real.string() +
                  "', outside the model's folder");
  if (!fs::is_regular_file(real, ec))
    return refuse("names '" + real.string() + "', which is not a regular file");
  ext.path = real.string();
  return ext;
}

namespace {

// How an ONNX data type stores its elements: bytes per element in raw_data, the typed field
// used otherwise, and how many field values make one element (2 for complex types).
struct OnnxTypeLayout {
  const char* name;
  int64_t raw_size;  // 0: raw_data is not allowed (STRING)
  enum Field { kFloat, kInt32, kInt64, kDouble, kUint64, kString } field;
  int per_element;
};

const OnnxTypeLayout* LayoutOf(int t) {
  using P = onnx::TensorProto;
  using L = OnnxTypeLayout;
  static const struct {
    int type;
    L layout;
  } kTable[] = {
      {P::FLOAT, {"float", 4, L::kFloat, 1}},
      {P::UINT8, {"uint8", 1, L::kInt32, 1}},
      {P::INT8, {"int8", 1, L::kInt32, 1}},
      {P::UINT16, {"uint16", 2, L::kInt32, 1}},
      {P::INT16, {"int16", 2, L::kInt32, 1}},
      {P::INT32, {"int32", 4, L::kInt32, 1}},
      {P::INT64, {"int64", 8, L::kInt64, 1}},
      {P::STRING, {"string", 0, L::kString, 1}},
      {P::BOOL, {"bool", 1, L::kInt32, 1}},
      {P::FLOAT16, {"float16", 2, L::kInt32, 1}},
      {P::DOUBLE, {"double", 8, L::kDouble, 1}},
      {P::UINT32, {"uint32", 4, L::kUint64, 1}},
      {P::UINT64, {"uint64", 8, L::kUint64, 1}},
      {P::COMPLEX64, {"complex64", 8, L::kFloat, 2}},
      {P::COMPLEX128, {"complex128", 16, L::kDouble, 2}},
      {P::BFLOAT16, {"bfloat16", 2, L::kInt32, 1}},
  };
  for (const auto& e : kTable)
    if (e.type == t) return &e.layout;
  return nullptr;
}

std::string DimsString(const onnx::TensorProto& p) {
  std::string s = "[";
  for (int i = 0; i < p.dims_size(); ++i) s += (i ? ", " : "") + std::to_string(p.dims(i));
  return s + "]";
}

}  // namespace

StatusOr<int64_t> CheckTensorPayload(const onnx::TensorProto& p, const std::string& what) {
  const OnnxTypeLayout* lay = LayoutOf(p.data_type());
  if (!lay)
    return InvalidArgument(what + ": data_type " + std::to_string(p.data_type()) +
                           " is not an ONNX tensor type (corrupt model?)");
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0)
      return InvalidArgument(what + ": dims " + DimsString(p) + " has a negative dimension");
  int64_t numel = 0, bytes = 0;
  const int64_t esize = lay->raw_size > 0 ? lay->raw_size : 1;
  if (!CheckedNumel(dims, &numel) || __builtin_mul_overflow(numel, esize, &bytes))
    return InvalidArgument(what + ": tensor too large: dims " + DimsString(p) +
                           " overflow a 64-bit size");
  if (p.data_location() == onnx::TensorProto::EXTERNAL) return numel;
  auto mismatch = [&](int64_t have, const char* field, const char* unit, int64_t need) {
    return DataLoss(what + ": " + field + " holds " + std::to_string(have) + " " + unit +
                    ", dims " + DimsString(p) + " of " + lay->name + " need " +
                    std::to_string(need) + " (truncated or corrupt model?)");
  };
  if (p.has_raw_data()) {
    if (lay->raw_size == 0)
      return InvalidArgument(what + ": a " + std::string(lay->name) +
                             " tensor cannot keep its data in raw_data");
    if (static_cast<int64_t>(p.raw_data().size()) != bytes)
      return mismatch(static_cast<int64_t>(p.raw_data().size()), "raw_data", "bytes", bytes);
    return numel;
  }
  int64_t have = 0;
  const char* field = "";
  switch (lay->field) {
    case OnnxTypeLayout::kFloat:
      have = p.float_data_size();
      field = "float_data";
      break;
    case OnnxTypeLayout::kInt32:
      have = p.int32_data_size();
      field = "int32_data";
      break;
    case OnnxTypeLayout::kInt64:
      have = p.int64_data_size();
      field = "int64_data";
      break;
    case OnnxTypeLayout::kDouble:
      have = p.double_data_size();
      field = "double_data";
      break;
    case OnnxTypeLayout::kUint64:
      have = p.uint64_data_size();
      field = "uint64_data";
      break;
    case OnnxTypeLayout::kString:
      have = p.string_data_size();
      field = "string_data";
      break;
  }
  const int64_t need = numel * lay->per_element;  // per_element 2 only for 8/16-byte types
  if (have != need) return mismatch(have, field, "values", need);
  return numel;
}

StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& p, const std::string& model_dir,
                                 const std::string& what) {
  // Sizes first, allocation after: a payload that does not match its dims never costs memory.
  OPSCOPE_ASSIGN_OR_RETURN(int64_t numel, CheckTensorPayload(p, what));
  StatusOr<DataType> type = FromOnnxType(p.data_type());
  if (!type.ok()) return type.status().WithPrefix(what);
  DataType dt = *type;
  std::vector<int64_t> shape(p.dims().begin(), p.dims().end());
  size_t esize = DataTypeSize(dt);
  if (numel > kMaxTensorBytes / static_cast<int64_t>(esize))
    return ResourceExhausted(what + ": tensor too large: " + std::to_string(numel) +
                             " elements (limit " + std::to_string(kMaxTensorBytes) + " bytes)");
  size_t need = static_cast<size_t>(numel) * esize;
  std::ifstream in;
  std::string ext_path;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    OPSCOPE_ASSIGN_OR_RETURN(ExternalData ext, ResolveExternalData(p, model_dir, what));
    in.open(ext.path, std::ios::binary);
    if (!in) return NotFound(what + ": cannot open external data file '" + ext.path + "'");
    in.seekg(0, std::ios::end);
    int64_t fsize = in.tellg();
    int64_t length = ext.length;
    if (length < 0) length = fsize - ext.offset;
    if (ext.offset > fsize || length > fsize - ext.offset)
      return DataLoss(what + ": external data '" + ext.path + "' is shorter than offset+length (" +
                      std::to_string(fsize) + " bytes)");
    if (static_cast<size_t>(length) != need)
      return DataLoss(what + ": external data holds " + std::to_string(length) +
                      " bytes, shape needs " + std::to_string(need));
    in.seekg(ext.offset);
    ext_path = ext.path;
  }
  Tensor t;
  try {
    t = Tensor(dt, shape);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(what + ": cannot allocate " + std::to_string(need) + " bytes");
  }
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(need));
    if (!in) return DataLoss(what + ": cannot read external data from '" + ext_path + "'");
    return t;
  }
  if (p.has_raw_data()) {
    std::memcpy(t.raw(), p.raw_data().data(), need);
    return t;
  }
  auto copy_from = [&](const auto& field, auto convert) -> Status {
    for (int64_t i = 0; i < numel; ++i) convert(i, field.Get(static_cast<int>(i)));
    return Status::Ok();
  };
  // Types narrower than int32 arrive in int32_data: a value that does not fit (a uint8 zero
  // point of 1000) is a damaged model, not a value to wrap.
  auto narrow = [&](int32_t hi, int32_t lo) -> Status {
    for (int64_t i = 0; i < numel; ++i) {
      const int32_t v = p.int32_data(static_cast<int>(i));
      if (v < lo || v > hi)
        return DataLoss(what + ": int32_data[" + std::to_string(i) + "] = " + std::to_string(v) +
                        " does not fit its type " + DataTypeName(dt) + " (" + std::to_string(lo) +
                        ".." + std::to_string(hi) + ")");
    }
    return Status::Ok();
  };
  switch (dt) {
    case DataType::kFloat32:
      OPSCOPE_RETURN_IF_ERROR(
          copy_from(p.float_data(), [&](int64_t i, float v) { t.data<float>()[i] = v; }));
      break;
    case DataType::kFloat64:
      OPSCOPE_RETURN_IF_ERROR(
          copy_from(p.double_data(), [&](int64_t i, double v) { t.data<double>()[i] = v; }));
      break;
    case DataType::kInt64:
      OPSCOPE_RETURN_IF_ERROR(
          copy_from(p.int64_data(), [&](int64_t i, int64_t v) { t.data<int64_t>()[i] = v; }));
      break;
    case DataType::kInt32:
      OPSCOPE_RETURN_IF_ERROR(
          copy_from(p.int32_data(), [&](int64_t i, int32_t v) { t.data<int32_t>()[i] = v; }));
      break;
    case DataType::kBool:
    case DataType::kUint8:
      OPSCOPE_RETURN_IF_ERROR(narrow(dt == DataType::kBool ? 1 : 255, 0));
      for (int64_t i = 0; i < numel; ++i)
        t.data<uint8_t>()[i] = static_cast<uint8_t>(p.int32_data(static_cast<int>(i)));
      break;
    case DataType::kInt8:
      OPSCOPE_RETURN_IF_ERROR(narrow(127, -128));
      for (int64_t i = 0; i < numel; ++i)
        t.data<int8_t>()[i] = static_cast<int8_t>(p.int32_data(static_cast<int>(i)));
      break;
    case DataType::kFloat16:
      // The bits of each half in the low 16 bits of an int32 (onnx.proto).
      OPSCOPE_RETURN_IF_ERROR(narrow(65535, 0));
      for (int64_t i = 0; i < numel; ++i)
        t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
      break;
  }
  return t;
}

void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(ToOnnxType(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_raw_data(t.raw(), t.nbytes());
}

StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name) {
  OPSCOPE_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  if (bytes.empty()) return DataLoss(path + ": empty file, not a serialized ONNX TensorProto");
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return DataLoss(path + ": not a serialized ONNX TensorProto (truncated or corrupt?)");
  if (name) *name = proto.name();
  std::string dir = std::filesystem::path(path).parent_path().string();
  return TensorFromProto(proto, dir, path);
}

Status WriteTensorFile(const Tensor& t, const std::string& name, const std::string& path) {
  onnx::TensorProto proto;
  TensorToProto(t, name, &proto);
  return WriteFileAtomic(path, proto.SerializeAsString());
}

}  // namespace opscope::engine
