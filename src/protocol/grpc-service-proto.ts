/**
 * The Open Inference Protocol's gRPC service as batchline serves it: `inference.GRPCInferenceService`
 * (KServe's open_inference_grpc.proto, and of Triton's superset grpc_service.proto the ModelConfig
 * call with the part of model_config.proto that describes a served model, ModelStatistics,
 * ModelStreamInfer, the SystemSharedMemory calls and the Repository calls), and the standard `grpc.health.v1.Health`. Message and field names and numbers are the protocol's, so any client
 * generated from either file talks to it; calls not listed answer UNIMPLEMENTED. Kept as text so
 * the package needs no .proto file at run time; `batchline`'s tests hand it to protoc.
 */
export const INFERENCE_PROTO = `syntax = "proto3";
package inference;

service GRPCInferenceService {
  rpc ServerLive(ServerLiveRequest) returns (ServerLiveResponse) {}
  rpc ServerReady(ServerReadyRequest) returns (ServerReadyResponse) {}
  rpc ModelReady(ModelReadyRequest) returns (ModelReadyResponse) {}
  rpc ServerMetadata(ServerMetadataRequest) returns (ServerMetadataResponse) {}
  rpc ModelMetadata(ModelMetadataRequest) returns (ModelMetadataResponse) {}
  rpc ModelInfer(ModelInferRequest) returns (ModelInferResponse) {}
  rpc ModelStreamInfer(stream ModelInferRequest) returns (stream ModelStreamInferResponse) {}
  rpc ModelConfig(ModelConfigRequest) returns (ModelConfigResponse) {}
  rpc ModelStatistics(ModelStatisticsRequest) returns (ModelStatisticsResponse) {}
  rpc SystemSharedMemoryStatus(SystemSharedMemoryStatusRequest) returns (SystemSharedMemoryStatusResponse) {}
  rpc SystemSharedMemoryRegister(SystemSharedMemoryRegisterRequest) returns (SystemSharedMemoryRegisterResponse) {}
  rpc SystemSharedMemoryUnregister(SystemSharedMemoryUnregisterRequest) returns (SystemSharedMemoryUnregisterResponse) {}
  rpc RepositoryIndex(RepositoryIndexRequest) returns (RepositoryIndexResponse) {}
  rpc RepositoryModelLoad(RepositoryModelLoadRequest) returns (RepositoryModelLoadResponse) {}
  rpc RepositoryModelUnload(RepositoryModelUnloadRequest) returns (RepositoryModelUnloadResponse) {}
}

message ModelRepositoryParameter {
  oneof parameter_choice {
    bool bool_param = 1;
    int64 int64_param = 2;
    string string_param = 3;
    bytes bytes_param = 4;
  }
}
message RepositoryIndexRequest { string repository_name = 1; bool ready = 2; }
message RepositoryIndexResponse {
  message ModelIndex {
    string name = 1;
    string version = 2;
    string state = 3;
    string reason = 4;
  }
  repeated ModelIndex models = 1;
}
message RepositoryModelLoadRequest {
  string repository_name = 1;
  string model_name = 2;
  map<string, ModelRepositoryParameter> parameters = 3;
}
message RepositoryModelLoadResponse {}
message RepositoryModelUnloadRequest {
  string repository_name = 1;
  string model_name = 2;
  map<string, ModelRepositoryParameter> parameters = 3;
}
message RepositoryModelUnloadResponse {}

message ServerLiveRequest {}
message ServerLiveResponse { bool live = 1; }
message ServerReadyRequest {}
message ServerReadyResponse { bool ready = 1; }
message ModelReadyRequest { string name = 1; string version = 2; }
message ModelReadyResponse { bool ready = 1; }
message ServerMetadataRequest {}
message ServerMetadataResponse {
  string name = 1;
  string version = 2;
  repeated string extensions = 3;
}
message ModelMetadataRequest { string name = 1; string version = 2; }
message ModelMetadataResponse {
  message TensorMetadata {
    string name = 1;
    string datatype = 2;
    repeated int64 shape = 3;
  }
  string name = 1;
  repeated string versions = 2;
  string platform = 3;
  repeated TensorMetadata inputs = 4;
  repeated TensorMetadata outputs = 5;
}

message InferParameter {
  oneof parameter_choice {
    bool bool_param = 1;
    int64 int64_param = 2;
    string string_param = 3;
    double double_param = 4;
    uint64 uint64_param = 5;
  }
}

message InferTensorContents {
  repeated bool bool_contents = 1;
  repeated int32 int_contents = 2;
  repeated int64 int64_contents = 3;
  repeated uint32 uint_contents = 4;
  repeated uint64 uint64_contents = 5;
  repeated float fp32_contents = 6;
  repeated double fp64_contents = 7;
  repeated bytes bytes_contents = 8;
}

message ModelInferRequest {
  message InferInputTensor {
    string name = 1;
    string datatype = 2;
    repeated int64 shape = 3;
    map<string, InferParameter> parameters = 4;
    InferTensorContents contents = 5;
  }
  message InferRequestedOutputTensor {
    string name = 1;
    map<string, InferParameter> parameters = 2;
  }
  string model_name = 1;
  string model_version = 2;
  string id = 3;
  map<string, InferParameter> parameters = 4;
  repeated InferInputTensor inputs = 5;
  repeated InferRequestedOutputTensor outputs = 6;
  repeated bytes raw_input_contents = 7;
}

message ModelInferResponse {
  message InferOutputTensor {
    string name = 1;
    string datatype = 2;
    repeated int64 shape = 3;
    map<string, InferParameter> parameters = 4;
    InferTensorContents contents = 5;
  }
  string model_name = 1;
  string model_version = 2;
  string id = 3;
  map<string, InferParameter> parameters = 4;
  repeated InferOutputTensor outputs = 5;
  repeated bytes raw_output_contents = 6;
}

message ModelStreamInferResponse {
  string error_message = 1;
  ModelInferResponse infer_response = 2;
}

message ModelConfigRequest { string name = 1; string version = 2; }
message ModelConfigResponse { ModelConfig config = 1; }

message ModelStatisticsRequest { string name = 1; string version = 2; }
message StatisticDuration { uint64 count = 1; uint64 ns = 2; }
message InferStatistics {
  StatisticDuration success = 1;
  StatisticDuration fail = 2;
  StatisticDuration queue = 3;
  StatisticDuration compute_input = 4;
  StatisticDuration compute_infer = 5;
  StatisticDuration compute_output = 6;
  StatisticDuration cache_hit = 7;
  StatisticDuration cache_miss = 8;
}
message InferResponseStatistics {
  StatisticDuration compute_infer = 1;
  StatisticDuration compute_output = 2;
  StatisticDuration success = 3;
  StatisticDuration fail = 4;
  StatisticDuration empty_response = 5;
  StatisticDuration cancel = 6;
}
message InferBatchStatistics {
  uint64 batch_size = 1;
  StatisticDuration compute_input = 2;
  StatisticDuration compute_infer = 3;
  StatisticDuration compute_output = 4;
}
message MemoryUsage { string type = 1; int64 id = 2; uint64 byte_size = 3; }
message ModelStatistics {
  string name = 1;
  string version = 2;
  uint64 last_inference = 3;
  uint64 inference_count = 4;
  uint64 execution_count = 5;
  InferStatistics inference_stats = 6;
  repeated InferBatchStatistics batch_stats = 7;
  repeated MemoryUsage memory_usage = 8;
  map<string, InferResponseStatistics> response_stats = 9;
}
message ModelStatisticsResponse { repeated ModelStatistics model_stats = 1; }

message SystemSharedMemoryStatusRequest { string name = 1; }
message SystemSharedMemoryStatusResponse {
  message RegionStatus {
    string name = 1;
    string key = 2;
    uint64 offset = 3;
    uint64 byte_size = 4;
  }
  map<string, RegionStatus> regions = 1;
}
message SystemSharedMemoryRegisterRequest {
  string name = 1;
  string key = 2;
  uint64 offset = 3;
  uint64 byte_size = 4;
}
message SystemSharedMemoryRegisterResponse {}
message SystemSharedMemoryUnregisterRequest { string name = 1; }
message SystemSharedMemoryUnregisterResponse {}

enum DataType {
  TYPE_INVALID = 0;
  TYPE_BOOL = 1;
  TYPE_UINT8 = 2;
  TYPE_UINT16 = 3;
  TYPE_UINT32 = 4;
  TYPE_UINT64 = 5;
  TYPE_INT8 = 6;
  TYPE_INT16 = 7;
  TYPE_INT32 = 8;
  TYPE_INT64 = 9;
  TYPE_FP16 = 10;
  TYPE_FP32 = 11;
  TYPE_FP64 = 12;
  TYPE_STRING = 13;
  TYPE_BF16 = 14;
}

message ModelInstanceGroup {
  enum Kind { KIND_AUTO = 0; KIND_GPU = 1; KIND_CPU = 2; KIND_MODEL = 3; }
  string name = 1;
  int32 count = 2;
  Kind kind = 4;
}

message ModelInput {
  string name = 1;
  DataType data_type = 2;
  repeated int64 dims = 4;
}

message ModelOutput {
  string name = 1;
  DataType data_type = 2;
  repeated int64 dims = 3;
  string label_filename = 4;
}

message ModelVersionPolicy {
  message Latest { uint32 num_versions = 1; }
  message All {}
  message Specific { repeated int64 versions = 1; }
  oneof policy_choice {
    Latest latest = 1;
    All all = 2;
    Specific specific = 3;
  }
}

message ModelQueuePolicy {
  enum TimeoutAction { REJECT = 0; DELAY = 1; }
  TimeoutAction timeout_action = 1;
  uint64 default_timeout_microseconds = 2;
  bool allow_timeout_override = 3;
  uint32 max_queue_size = 4;
}

message ModelDynamicBatching {
  repeated int32 preferred_batch_size = 1;
  uint64 max_queue_delay_microseconds = 2;
  bool preserve_ordering = 3;
  uint64 priority_levels = 4;
  uint64 default_priority_level = 5;
  ModelQueuePolicy default_queue_policy = 6;
  map<uint64, ModelQueuePolicy> priority_queue_policy = 7;
}

message ModelWarmup {
  message Input {
    DataType data_type = 1;
    repeated int64 dims = 2;
    oneof input_data_type {
      bool zero_data = 3;
      bool random_data = 4;
      string input_data_file = 5;
    }
  }
  string name = 1;
  uint32 batch_size = 2;
  map<string, Input> inputs = 3;
  uint32 count = 4;
}

message ModelConfig {
  string name = 1;
  string platform = 2;
  string backend = 17;
  ModelVersionPolicy version_policy = 3;
  int32 max_batch_size = 4;
  repeated ModelInput input = 5;
  repeated ModelOutput output = 6;
  oneof scheduling_choice {
    ModelDynamicBatching dynamic_batching = 11;
  }
  repeated ModelInstanceGroup instance_group = 7;
  string default_model_filename = 8;
  map<string, ModelParameter> parameters = 14;
  repeated ModelWarmup model_warmup = 16;
}
message ModelParameter { string string_value = 1; }
`;

/** The standard health service (grpc/grpc-proto's health.proto), which load balancers and Kubernetes probe. */
export const HEALTH_PROTO = `syntax = "proto3";
package grpc.health.v1;

message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health {
  rpc Check(HealthCheckRequest) returns (HealthCheckResponse);
  rpc Watch(HealthCheckRequest) returns (stream HealthCheckResponse);
}
`;

/** The service's full name and the path of its inference call, as they travel in HTTP/2. */
export const INFERENCE_SERVICE = 'inference.GRPCInferenceService';
export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health';
export const MODEL_INFER_PATH = `/${INFERENCE_SERVICE}/ModelInfer`;
