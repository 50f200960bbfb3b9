// Conversions between ONNX protobuf messages and engine tensors. Internal to the engine (and
// to tools that read/write TensorProto .pb files: --input, --save-outputs, the conformance test).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "opscope/tensor.h"

namespace onnx {
class TensorProto;
}

namespace opscope::engine {

// Maps an ONNX TensorProto data type to ours; Unsupported for types the engine does not run.
StatusOr<DataType> FromOnnxType(int onnx_type);
int ToOnnxType(DataType t);

// Where a tensor with data_location EXTERNAL keeps its bytes.
struct ExternalData {
  std::string path;  // canonical: symlinks resolved
  int64_t offset = 0;
  int64_t length = -1;  // -1: to the end of the file
};
// Resolves the tensor's external_data entries against `model_dir` ("" is the current folder).
// The location must be a relative path that names a regular file inside model_dir once "..",
// "." and symbolic links are resolved: anything else (absolute, leading out of the folder, a
// link to elsewhere) is refused, so a model can never make opscope read other files. `what`
// names the tensor in errors.
StatusOr<ExternalData> ResolveExternalData(const onnx::TensorProto& proto,
                                           const std::string& model_dir, const std::string& what);

// Checks a TensorProto against itself before anything reads its payload by its dims (libonnx's
// shape inference does, unchecked): the data type is one ONNX defines, dims are non-negative and
// their product (times the element size) fits int64, and the payload (raw_data, or the typed
// field the type uses) holds exactly that many elements. External data is sized later, when it
// is read. Returns the element count; `what` names the tensor in errors.
StatusOr<int64_t> CheckTensorPayload(const onnx::TensorProto& proto, const std::string& what);

// `model_dir` resolves external data locations (see ResolveExternalData). `what` names the
// tensor in errors.
StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& model_dir,
                                 const std::string& what);
void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

// A serialized TensorProto file (.pb), as ONNX's test data and most runtimes write them.
StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name = nullptr);
Status WriteTensorFile(const Tensor& t, const std::string& name, const std::string& path);

}  // namespace opscope::engine
