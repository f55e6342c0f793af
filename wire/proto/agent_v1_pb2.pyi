from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BidiRequestId(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class AgentClientMessage(_message.Message):
    __slots__ = ("run_request", "exec_client_message", "exec_client_control_message", "kv_client_message", "conversation_action", "interaction_response", "client_heartbeat", "prewarm_request")
    RUN_REQUEST_FIELD_NUMBER: _ClassVar[int]
    EXEC_CLIENT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXEC_CLIENT_CONTROL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KV_CLIENT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ACTION_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    PREWARM_REQUEST_FIELD_NUMBER: _ClassVar[int]
    run_request: AgentRunRequest
    exec_client_message: ExecClientMessage
    exec_client_control_message: ExecClientControlMessage
    kv_client_message: KvClientMessage
    conversation_action: ConversationAction
    interaction_response: InteractionResponse
    client_heartbeat: ClientHeartbeat
    prewarm_request: PrewarmRequest
    def __init__(self, run_request: _Optional[_Union[AgentRunRequest, _Mapping]] = ..., exec_client_message: _Optional[_Union[ExecClientMessage, _Mapping]] = ..., exec_client_control_message: _Optional[_Union[ExecClientControlMessage, _Mapping]] = ..., kv_client_message: _Optional[_Union[KvClientMessage, _Mapping]] = ..., conversation_action: _Optional[_Union[ConversationAction, _Mapping]] = ..., interaction_response: _Optional[_Union[InteractionResponse, _Mapping]] = ..., client_heartbeat: _Optional[_Union[ClientHeartbeat, _Mapping]] = ..., prewarm_request: _Optional[_Union[PrewarmRequest, _Mapping]] = ...) -> None: ...

class AgentRunRequest(_message.Message):
    __slots__ = ("conversation_state", "action", "model_details", "requested_model", "conversation_id", "run_id")
    CONVERSATION_STATE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    MODEL_DETAILS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_state: ConversationStateStructure
    action: ConversationAction
    model_details: ModelDetails
    requested_model: RequestedModel
    conversation_id: str
    run_id: str
    def __init__(self, conversation_state: _Optional[_Union[ConversationStateStructure, _Mapping]] = ..., action: _Optional[_Union[ConversationAction, _Mapping]] = ..., model_details: _Optional[_Union[ModelDetails, _Mapping]] = ..., requested_model: _Optional[_Union[RequestedModel, _Mapping]] = ..., conversation_id: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class RequestedModel(_message.Message):
    __slots__ = ("model_id", "max_mode", "parameters")
    class ModelParameterValue(_message.Message):
        __slots__ = ("id", "value")
        ID_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        id: str
        value: str
        def __init__(self, id: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_MODE_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    max_mode: bool
    parameters: _containers.RepeatedCompositeFieldContainer[RequestedModel.ModelParameterValue]
    def __init__(self, model_id: _Optional[str] = ..., max_mode: _Optional[bool] = ..., parameters: _Optional[_Iterable[_Union[RequestedModel.ModelParameterValue, _Mapping]]] = ...) -> None: ...

class ModelDetails(_message.Message):
    __slots__ = ("model_id", "display_model_id", "display_name", "display_name_short", "thinking_details", "max_mode")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_SHORT_FIELD_NUMBER: _ClassVar[int]
    THINKING_DETAILS_FIELD_NUMBER: _ClassVar[int]
    MAX_MODE_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    display_model_id: str
    display_name: str
    display_name_short: str
    thinking_details: ThinkingDetails
    max_mode: bool
    def __init__(self, model_id: _Optional[str] = ..., display_model_id: _Optional[str] = ..., display_name: _Optional[str] = ..., display_name_short: _Optional[str] = ..., thinking_details: _Optional[_Union[ThinkingDetails, _Mapping]] = ..., max_mode: _Optional[bool] = ...) -> None: ...

class ThinkingDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConversationAction(_message.Message):
    __slots__ = ("resume_action", "cancel_action")
    RESUME_ACTION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ACTION_FIELD_NUMBER: _ClassVar[int]
    resume_action: ResumeAction
    cancel_action: CancelAction
    def __init__(self, resume_action: _Optional[_Union[ResumeAction, _Mapping]] = ..., cancel_action: _Optional[_Union[CancelAction, _Mapping]] = ...) -> None: ...

class ResumeAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelAction(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ExecClientMessage(_message.Message):
    __slots__ = ("id", "exec_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ...) -> None: ...

class ExecClientControlMessage(_message.Message):
    __slots__ = ("stream_close", "throw", "heartbeat")
    STREAM_CLOSE_FIELD_NUMBER: _ClassVar[int]
    THROW_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    stream_close: ExecClientStreamClose
    throw: ExecClientThrow
    heartbeat: ExecClientHeartbeat
    def __init__(self, stream_close: _Optional[_Union[ExecClientStreamClose, _Mapping]] = ..., throw: _Optional[_Union[ExecClientThrow, _Mapping]] = ..., heartbeat: _Optional[_Union[ExecClientHeartbeat, _Mapping]] = ...) -> None: ...

class ExecClientStreamClose(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ExecClientThrow(_message.Message):
    __slots__ = ("id", "error", "stack_trace", "error_code")
    ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STACK_TRACE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    id: int
    error: str
    stack_trace: str
    error_code: str
    def __init__(self, id: _Optional[int] = ..., error: _Optional[str] = ..., stack_trace: _Optional[str] = ..., error_code: _Optional[str] = ...) -> None: ...

class ExecClientHeartbeat(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class KvClientMessage(_message.Message):
    __slots__ = ("id", "get_blob_result", "set_blob_result")
    ID_FIELD_NUMBER: _ClassVar[int]
    GET_BLOB_RESULT_FIELD_NUMBER: _ClassVar[int]
    SET_BLOB_RESULT_FIELD_NUMBER: _ClassVar[int]
    id: int
    get_blob_result: GetBlobResult
    set_blob_result: SetBlobResult
    def __init__(self, id: _Optional[int] = ..., get_blob_result: _Optional[_Union[GetBlobResult, _Mapping]] = ..., set_blob_result: _Optional[_Union[SetBlobResult, _Mapping]] = ...) -> None: ...

class GetBlobResult(_message.Message):
    __slots__ = ("blob_data", "error")
    BLOB_DATA_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    blob_data: bytes
    error: Error
    def __init__(self, blob_data: _Optional[bytes] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class SetBlobResult(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: Error
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class InteractionResponse(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ClientHeartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PrewarmRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class AgentServerMessage(_message.Message):
    __slots__ = ("interaction_update", "exec_server_message", "exec_server_control_message", "conversation_checkpoint_update", "kv_server_message", "interaction_query")
    INTERACTION_UPDATE_FIELD_NUMBER: _ClassVar[int]
    EXEC_SERVER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXEC_SERVER_CONTROL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_CHECKPOINT_UPDATE_FIELD_NUMBER: _ClassVar[int]
    KV_SERVER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_QUERY_FIELD_NUMBER: _ClassVar[int]
    interaction_update: InteractionUpdate
    exec_server_message: ExecServerMessage
    exec_server_control_message: ExecServerControlMessage
    conversation_checkpoint_update: ConversationStateStructure
    kv_server_message: KvServerMessage
    interaction_query: InteractionQuery
    def __init__(self, interaction_update: _Optional[_Union[InteractionUpdate, _Mapping]] = ..., exec_server_message: _Optional[_Union[ExecServerMessage, _Mapping]] = ..., exec_server_control_message: _Optional[_Union[ExecServerControlMessage, _Mapping]] = ..., conversation_checkpoint_update: _Optional[_Union[ConversationStateStructure, _Mapping]] = ..., kv_server_message: _Optional[_Union[KvServerMessage, _Mapping]] = ..., interaction_query: _Optional[_Union[InteractionQuery, _Mapping]] = ...) -> None: ...

class InteractionUpdate(_message.Message):
    __slots__ = ("heartbeat",)
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    heartbeat: HeartbeatUpdate
    def __init__(self, heartbeat: _Optional[_Union[HeartbeatUpdate, _Mapping]] = ...) -> None: ...

class HeartbeatUpdate(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExecServerMessage(_message.Message):
    __slots__ = ("id", "exec_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ...) -> None: ...

class ExecServerControlMessage(_message.Message):
    __slots__ = ("abort",)
    ABORT_FIELD_NUMBER: _ClassVar[int]
    abort: ExecServerAbort
    def __init__(self, abort: _Optional[_Union[ExecServerAbort, _Mapping]] = ...) -> None: ...

class ExecServerAbort(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ConversationStateStructure(_message.Message):
    __slots__ = ("root_prompt_messages_json", "turns", "pending_tool_calls")
    ROOT_PROMPT_MESSAGES_JSON_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    PENDING_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    root_prompt_messages_json: _containers.RepeatedScalarFieldContainer[bytes]
    turns: _containers.RepeatedScalarFieldContainer[bytes]
    pending_tool_calls: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, root_prompt_messages_json: _Optional[_Iterable[bytes]] = ..., turns: _Optional[_Iterable[bytes]] = ..., pending_tool_calls: _Optional[_Iterable[str]] = ...) -> None: ...

class KvServerMessage(_message.Message):
    __slots__ = ("id", "get_blob_args", "set_blob_args")
    ID_FIELD_NUMBER: _ClassVar[int]
    GET_BLOB_ARGS_FIELD_NUMBER: _ClassVar[int]
    SET_BLOB_ARGS_FIELD_NUMBER: _ClassVar[int]
    id: int
    get_blob_args: GetBlobArgs
    set_blob_args: SetBlobArgs
    def __init__(self, id: _Optional[int] = ..., get_blob_args: _Optional[_Union[GetBlobArgs, _Mapping]] = ..., set_blob_args: _Optional[_Union[SetBlobArgs, _Mapping]] = ...) -> None: ...

class GetBlobArgs(_message.Message):
    __slots__ = ("blob_id",)
    BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    blob_id: bytes
    def __init__(self, blob_id: _Optional[bytes] = ...) -> None: ...

class SetBlobArgs(_message.Message):
    __slots__ = ("blob_id", "blob_data")
    BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    BLOB_DATA_FIELD_NUMBER: _ClassVar[int]
    blob_id: bytes
    blob_data: bytes
    def __init__(self, blob_id: _Optional[bytes] = ..., blob_data: _Optional[bytes] = ...) -> None: ...

class InteractionQuery(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class GetUsableModelsResponse(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelDetails]
    def __init__(self, models: _Optional[_Iterable[_Union[ModelDetails, _Mapping]]] = ...) -> None: ...
