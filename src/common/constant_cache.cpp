#include <grafx/tensors.h>

#include "common/tensors.h"

#include <ATen/ATen.h>

namespace grafx {

at::Tensor ConstantCache::get(const std::string& key, const at::TensorOptions& options,
                              const std::function<at::Tensor()>& make) const {
  std::string full_key =
      key + "@" + options.device().str() + "/" + detail::dtype_name(options.dtype().toScalarType());
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tensors_.find(full_key);
  if (it != tensors_.end()) return it->second;
  at::Tensor value   = make().to(options.device(), options.dtype()).contiguous();
  tensors_[full_key] = value;
  return value;
}

}  // namespace grafx
