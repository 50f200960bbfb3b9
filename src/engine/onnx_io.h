// Conversions between ONNX protobuf messages and engine tensors. Internal to the engine (and
// to tools that read/write TensorProto .pb files: --input, --save-outputs, the conformance test).
#pragma once

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

// `model_dir` resolves external data locations. `what` names the tensor in errors.
StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& model_dir,
                                 const std::string& what);
void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

// A serialized TensorProto file (.pb), as ONNX's test data and most runtimes write them.
StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name = nullptr);
Status WriteTensorFile(const Tensor& t, const std::string& name, const std::string& path);

}  // namespace opscope::engine
