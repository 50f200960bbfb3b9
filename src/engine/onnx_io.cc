#include "engine/onnx_io.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/files.h"

namespace opscope::engine {

StatusOr<DataType> FromOnnxType(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DataType::kFloat32;
    case onnx::TensorProto::INT64: return DataType::kInt64;
    case onnx::TensorProto::INT32: return DataType::kInt32;
    case onnx::TensorProto::BOOL: return DataType::kBool;
    case onnx::TensorProto::UINT8: return DataType::kUint8;
    case onnx::TensorProto::INT8: return DataType::kInt8;
    case onnx::TensorProto::DOUBLE: return DataType::kFloat64;
    case onnx::TensorProto::FLOAT16: return DataType::kFloat16;
    default: break;
  }
  const auto* d = onnx::TensorProto::DataType_descriptor();
  const auto* v = d->FindValueByNumber(t);
  return Unsupported(std::string("tensor data type ") + (v ? v->name() : std::to_string(t)) +
                     " is not supported by the engine");
}

int ToOnnxType(DataType t) {
  switch (t) {
    case DataType::kFloat32: return onnx::TensorProto::FLOAT;
    case DataType::kInt64: return onnx::TensorProto::INT64;
    case DataType::kInt32: return onnx::TensorProto::INT32;
    case DataType::kBool: return onnx::TensorProto::BOOL;
    case DataType::kUint8: return onnx::TensorProto::UINT8;
    case DataType::kInt8: return onnx::TensorProto::INT8;
    case DataType::kFloat64: return onnx::TensorProto::DOUBLE;
    case DataType::kFloat16: return onnx::TensorProto::FLOAT16;
  }
  return onnx::TensorProto::UNDEFINED;
}

static constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;  // 64 GiB: beyond is surely corrupt

StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& p, const std::string& model_dir,
                                 const std::string& what) {
  OPSCOPE_ASSIGN_OR_RETURN(DataType dt, FromOnnxType(p.data_type()));
  std::vector<int64_t> shape(p.dims().begin(), p.dims().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgument(what + ": negative dimension");
    if (d > 0 && numel > kMaxTensorBytes / d) return ResourceExhausted(what + ": tensor too large");
    numel *= d;
  }
  size_t esize = DataTypeSize(dt);
  if (numel * static_cast<int64_t>(esize) > kMaxTensorBytes)
    return ResourceExhausted(what + ": tensor of " + std::to_string(numel) + " elements is too large to allocate");
  Tensor t;
  try {
    t = Tensor(dt, shape);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(what + ": cannot allocate " + std::to_string(numel * esize) + " bytes");
  }
  size_t need = static_cast<size_t>(numel) * esize;
  auto mismatch = [&](size_t have) {
    return DataLoss(what + ": holds " + std::to_string(have) + " values/bytes, shape needs " +
                    std::to_string(numel) + " elements");
  };
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : p.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    }
    if (location.empty()) return DataLoss(what + ": external data without a location");
    std::filesystem::path path = std::filesystem::path(model_dir) / location;
    std::ifstream in(path, std::ios::binary);
    if (!in) return NotFound(what + ": external data file '" + path.string() + "' is missing");
    in.seekg(0, std::ios::end);
    int64_t fsize = in.tellg();
    if (length < 0) length = fsize - offset;
    if (offset < 0 || offset + length > fsize)
      return DataLoss(what + ": external data '" + path.string() + "' is shorter than offset+length (" +
                      std::to_string(fsize) + " bytes)");
    if (static_cast<size_t>(length) != need) return mismatch(static_cast<size_t>(length));
    in.seekg(offset);
    in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(need));
    if (!in) return DataLoss(what + ": cannot read external data from '" + path.string() + "'");
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != need) return mismatch(p.raw_data().size());
    std::memcpy(t.raw(), p.raw_data().data(), need);
    return t;
  }
  auto copy_from = [&](const auto& field, auto convert) -> Status {
    if (static_cast<int64_t>(field.size()) != numel) return mismatch(field.size());
    for (int64_t i = 0; i < numel; ++i) convert(i, field.Get(static_cast<int>(i)));
    return Status::Ok();
  };
  switch (dt) {
    case DataType::kFloat32:
      OPSCOPE_RETURN_IF_ERROR(copy_from(p.float_data(), [&](int64_t i, float v) { t.data<float>()[i] = v; }));
      break;
    case DataType::kFloat64:
      OPSCOPE_RETURN_IF_ERROR(copy_from(p.double_data(), [&](int64_t i, double v) { t.data<double>()[i] = v; }));
      break;
    case DataType::kInt64:
      OPSCOPE_RETURN_IF_ERROR(copy_from(p.int64_data(), [&](int64_t i, int64_t v) { t.data<int64_t>()[i] = v; }));
      break;
    case DataType::kInt32:
      OPSCOPE_RETURN_IF_ERROR(copy_from(p.int32_data(), [&](int64_t i, int32_t v) { t.data<int32_t>()[i] = v; }));
      break;
    case DataType::kBool:
    case DataType::kUint8:
      OPSCOPE_RETURN_IF_ERROR(copy_from(p.int32_data(), [&](int64_t i, int32_t v) { t.data<uint8_t>()[i] = static_cast<uint8_t>(v); }));
      break;
    case DataType::kInt8:
      OPSCOPE_RETURN_IF_ERROR(copy_from(p.int32_data(), [&](int64_t i, int32_t v) { t.data<int8_t>()[i] = static_cast<int8_t>(v); }));
      break;
    case DataType::kFloat16:
      OPSCOPE_RETURN_IF_ERROR(copy_from(p.int32_data(), [&](int64_t i, int32_t v) { t.data<uint16_t>()[i] = static_cast<uint16_t>(v); }));
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
