#pragma once
/// The processor registry: the one explicit list of grafx's processors
/// (src/processors/registry.cpp), from which node types, the CLI's listing and the contract
/// tests are generated.
///
///   auto eq = make_processor("eq", {/*sample_rate=*/30000});
///   Processors processors = make_processors(graph.types(), {30000});

#include <grafx/graph/node_types.h>
#include <grafx/processors/processor.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace grafx {

struct ProcessorInfo {
  std::string name;     ///< node type name, e.g. "eq"
  std::string summary;  ///< one line for listings
  std::function<std::unique_ptr<Processor>(const ProcessorConfig&)> make;
};

/// Every registered processor, in registry order.
const std::vector<ProcessorInfo>& processor_registry();

/// Throws ProcessorError [grafx.processor.unknown] naming the known processors.
std::unique_ptr<Processor> make_processor(const std::string& name, const ProcessorConfig& config);

/// The utility types plus every registered processor's type (name and ports).
NodeTypes registry_node_types();

/// Processors by node type name.
using Processors = std::map<std::string, std::shared_ptr<const Processor>>;

/// One processor for each non-utility type of `types`; throws ProcessorError
/// [grafx.processor.unknown] for a type no processor implements, and
/// [grafx.processor.ports] when a type's ports differ from its processor's.
Processors make_processors(const NodeTypes& types, const ProcessorConfig& config);

}  // namespace grafx
