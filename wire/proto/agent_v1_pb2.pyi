from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGENT_MODE_UNSPECIFIED: _ClassVar[AgentMode]
    AGENT_MODE_AGENT: _ClassVar[AgentMode]
    AGENT_MODE_ASK: _ClassVar[AgentMode]
    AGENT_MODE_PLAN: _ClassVar[AgentMode]
    AGENT_MODE_DEBUG: _ClassVar[AgentMode]
    AGENT_MODE_TRIAGE: _ClassVar[AgentMode]
    AGENT_MODE_PROJECT: _ClassVar[AgentMode]
    AGENT_MODE_MULTITASK: _ClassVar[AgentMode]
    AGENT_MODE_CUSTOM: _ClassVar[AgentMode]

class SimulatedMsgReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIMULATED_MSG_REASON_UNSPECIFIED: _ClassVar[SimulatedMsgReason]
    SIMULATED_MSG_REASON_BACKGROUND_TASK_COMPLETION: _ClassVar[SimulatedMsgReason]

class ThinkingStyle(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    THINKING_STYLE_UNSPECIFIED: _ClassVar[ThinkingStyle]
    THINKING_STYLE_DEFAULT: _ClassVar[ThinkingStyle]
    THINKING_STYLE_CODEX: _ClassVar[ThinkingStyle]
    THINKING_STYLE_GPT5: _ClassVar[ThinkingStyle]

class TodoStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TODO_STATUS_UNSPECIFIED: _ClassVar[TodoStatus]
    TODO_STATUS_PENDING: _ClassVar[TodoStatus]
    TODO_STATUS_IN_PROGRESS: _ClassVar[TodoStatus]
    TODO_STATUS_COMPLETED: _ClassVar[TodoStatus]
    TODO_STATUS_CANCELLED: _ClassVar[TodoStatus]
AGENT_MODE_UNSPECIFIED: AgentMode
AGENT_MODE_AGENT: AgentMode
AGENT_MODE_ASK: AgentMode
AGENT_MODE_PLAN: AgentMode
AGENT_MODE_DEBUG: AgentMode
AGENT_MODE_TRIAGE: AgentMode
AGENT_MODE_PROJECT: AgentMode
AGENT_MODE_MULTITASK: AgentMode
AGENT_MODE_CUSTOM: AgentMode
SIMULATED_MSG_REASON_UNSPECIFIED: SimulatedMsgReason
SIMULATED_MSG_REASON_BACKGROUND_TASK_COMPLETION: SimulatedMsgReason
THINKING_STYLE_UNSPECIFIED: ThinkingStyle
THINKING_STYLE_DEFAULT: ThinkingStyle
THINKING_STYLE_CODEX: ThinkingStyle
THINKING_STYLE_GPT5: ThinkingStyle
TODO_STATUS_UNSPECIFIED: TodoStatus
TODO_STATUS_PENDING: TodoStatus
TODO_STATUS_IN_PROGRESS: TodoStatus
TODO_STATUS_COMPLETED: TodoStatus
TODO_STATUS_CANCELLED: TodoStatus

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
    __slots__ = ("user_message_action", "resume_action", "cancel_action")
    USER_MESSAGE_ACTION_FIELD_NUMBER: _ClassVar[int]
    RESUME_ACTION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ACTION_FIELD_NUMBER: _ClassVar[int]
    user_message_action: UserMessageAction
    resume_action: ResumeAction
    cancel_action: CancelAction
    def __init__(self, user_message_action: _Optional[_Union[UserMessageAction, _Mapping]] = ..., resume_action: _Optional[_Union[ResumeAction, _Mapping]] = ..., cancel_action: _Optional[_Union[CancelAction, _Mapping]] = ...) -> None: ...

class UserMessageAction(_message.Message):
    __slots__ = ("user_message", "prepend_user_messages")
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PREPEND_USER_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    user_message: UserMessage
    prepend_user_messages: _containers.RepeatedCompositeFieldContainer[UserMessage]
    def __init__(self, user_message: _Optional[_Union[UserMessage, _Mapping]] = ..., prepend_user_messages: _Optional[_Iterable[_Union[UserMessage, _Mapping]]] = ...) -> None: ...

class UserMessage(_message.Message):
    __slots__ = ("text", "message_id", "mode", "is_simulated_msg", "simulated_msg_reason", "subagent_system_reminder", "simulated_message_metadata")
    class SimulatedMessageMetadata(_message.Message):
        __slots__ = ("title", "task_id")
        TITLE_FIELD_NUMBER: _ClassVar[int]
        TASK_ID_FIELD_NUMBER: _ClassVar[int]
        title: str
        task_id: str
        def __init__(self, title: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    IS_SIMULATED_MSG_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_MSG_REASON_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_SYSTEM_REMINDER_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_MESSAGE_METADATA_FIELD_NUMBER: _ClassVar[int]
    text: str
    message_id: str
    mode: AgentMode
    is_simulated_msg: bool
    simulated_msg_reason: SimulatedMsgReason
    subagent_system_reminder: str
    simulated_message_metadata: UserMessage.SimulatedMessageMetadata
    def __init__(self, text: _Optional[str] = ..., message_id: _Optional[str] = ..., mode: _Optional[_Union[AgentMode, str]] = ..., is_simulated_msg: _Optional[bool] = ..., simulated_msg_reason: _Optional[_Union[SimulatedMsgReason, str]] = ..., subagent_system_reminder: _Optional[str] = ..., simulated_message_metadata: _Optional[_Union[UserMessage.SimulatedMessageMetadata, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("text_delta", "thinking_delta", "thinking_completed", "token_delta", "heartbeat", "turn_ended")
    TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    THINKING_DELTA_FIELD_NUMBER: _ClassVar[int]
    THINKING_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_DELTA_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ENDED_FIELD_NUMBER: _ClassVar[int]
    text_delta: TextDeltaUpdate
    thinking_delta: ThinkingDeltaUpdate
    thinking_completed: ThinkingCompletedUpdate
    token_delta: TokenDeltaUpdate
    heartbeat: HeartbeatUpdate
    turn_ended: TurnEndedUpdate
    def __init__(self, text_delta: _Optional[_Union[TextDeltaUpdate, _Mapping]] = ..., thinking_delta: _Optional[_Union[ThinkingDeltaUpdate, _Mapping]] = ..., thinking_completed: _Optional[_Union[ThinkingCompletedUpdate, _Mapping]] = ..., token_delta: _Optional[_Union[TokenDeltaUpdate, _Mapping]] = ..., heartbeat: _Optional[_Union[HeartbeatUpdate, _Mapping]] = ..., turn_ended: _Optional[_Union[TurnEndedUpdate, _Mapping]] = ...) -> None: ...

class TextDeltaUpdate(_message.Message):
    __slots__ = ("text", "is_server_notice")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IS_SERVER_NOTICE_FIELD_NUMBER: _ClassVar[int]
    text: str
    is_server_notice: bool
    def __init__(self, text: _Optional[str] = ..., is_server_notice: _Optional[bool] = ...) -> None: ...

class ThinkingDeltaUpdate(_message.Message):
    __slots__ = ("text", "thinking_style")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    THINKING_STYLE_FIELD_NUMBER: _ClassVar[int]
    text: str
    thinking_style: ThinkingStyle
    def __init__(self, text: _Optional[str] = ..., thinking_style: _Optional[_Union[ThinkingStyle, str]] = ...) -> None: ...

class ThinkingCompletedUpdate(_message.Message):
    __slots__ = ("thinking_duration_ms",)
    THINKING_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    thinking_duration_ms: int
    def __init__(self, thinking_duration_ms: _Optional[int] = ...) -> None: ...

class TokenDeltaUpdate(_message.Message):
    __slots__ = ("tokens",)
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    tokens: int
    def __init__(self, tokens: _Optional[int] = ...) -> None: ...

class TurnEndedUpdate(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REASONING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., reasoning_tokens: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("root_prompt_messages_json", "turns", "todos", "pending_tool_calls", "token_details", "plan", "mode", "read_paths")
    ROOT_PROMPT_MESSAGES_JSON_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    PENDING_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_DETAILS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    READ_PATHS_FIELD_NUMBER: _ClassVar[int]
    root_prompt_messages_json: _containers.RepeatedScalarFieldContainer[bytes]
    turns: _containers.RepeatedScalarFieldContainer[bytes]
    todos: _containers.RepeatedScalarFieldContainer[bytes]
    pending_tool_calls: _containers.RepeatedScalarFieldContainer[str]
    token_details: ConversationTokenDetails
    plan: bytes
    mode: AgentMode
    read_paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, root_prompt_messages_json: _Optional[_Iterable[bytes]] = ..., turns: _Optional[_Iterable[bytes]] = ..., todos: _Optional[_Iterable[bytes]] = ..., pending_tool_calls: _Optional[_Iterable[str]] = ..., token_details: _Optional[_Union[ConversationTokenDetails, _Mapping]] = ..., plan: _Optional[bytes] = ..., mode: _Optional[_Union[AgentMode, str]] = ..., read_paths: _Optional[_Iterable[str]] = ...) -> None: ...

class ConversationTokenDetails(_message.Message):
    __slots__ = ("used_tokens", "max_tokens", "breakdown")
    USED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    used_tokens: int
    max_tokens: int
    breakdown: PromptTokenBreakdownSnapshot
    def __init__(self, used_tokens: _Optional[int] = ..., max_tokens: _Optional[int] = ..., breakdown: _Optional[_Union[PromptTokenBreakdownSnapshot, _Mapping]] = ...) -> None: ...

class PromptTokenBreakdownSnapshot(_message.Message):
    __slots__ = ("total_used_tokens", "max_tokens", "categories")
    TOTAL_USED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CATEGORIES_FIELD_NUMBER: _ClassVar[int]
    total_used_tokens: int
    max_tokens: int
    categories: _containers.RepeatedCompositeFieldContainer[PromptTokenBreakdownCategory]
    def __init__(self, total_used_tokens: _Optional[int] = ..., max_tokens: _Optional[int] = ..., categories: _Optional[_Iterable[_Union[PromptTokenBreakdownCategory, _Mapping]]] = ...) -> None: ...

class PromptTokenBreakdownCategory(_message.Message):
    __slots__ = ("id", "label", "estimated_tokens", "character_count")
    ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_COUNT_FIELD_NUMBER: _ClassVar[int]
    id: str
    label: str
    estimated_tokens: int
    character_count: int
    def __init__(self, id: _Optional[str] = ..., label: _Optional[str] = ..., estimated_tokens: _Optional[int] = ..., character_count: _Optional[int] = ...) -> None: ...

class ConversationTurnStructure(_message.Message):
    __slots__ = ("agent_conversation_turn",)
    AGENT_CONVERSATION_TURN_FIELD_NUMBER: _ClassVar[int]
    agent_conversation_turn: AgentConversationTurnStructure
    def __init__(self, agent_conversation_turn: _Optional[_Union[AgentConversationTurnStructure, _Mapping]] = ...) -> None: ...

class AgentConversationTurnStructure(_message.Message):
    __slots__ = ("user_message", "steps", "request_id")
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    user_message: bytes
    steps: _containers.RepeatedScalarFieldContainer[bytes]
    request_id: str
    def __init__(self, user_message: _Optional[bytes] = ..., steps: _Optional[_Iterable[bytes]] = ..., request_id: _Optional[str] = ...) -> None: ...

class ConversationStep(_message.Message):
    __slots__ = ("assistant_message", "tool_call", "thinking_message")
    ASSISTANT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    THINKING_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    assistant_message: AssistantMessage
    tool_call: ToolCall
    thinking_message: ThinkingMessage
    def __init__(self, assistant_message: _Optional[_Union[AssistantMessage, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., thinking_message: _Optional[_Union[ThinkingMessage, _Mapping]] = ...) -> None: ...

class AssistantMessage(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ThinkingMessage(_message.Message):
    __slots__ = ("text", "duration_ms")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    text: str
    duration_ms: int
    def __init__(self, text: _Optional[str] = ..., duration_ms: _Optional[int] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("tool_call_id", "started_at_ms", "completed_at_ms")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    started_at_ms: int
    completed_at_ms: int
    def __init__(self, tool_call_id: _Optional[str] = ..., started_at_ms: _Optional[int] = ..., completed_at_ms: _Optional[int] = ...) -> None: ...

class TodoItem(_message.Message):
    __slots__ = ("id", "content", "status", "created_at", "updated_at", "dependencies")
    ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    id: str
    content: str
    status: TodoStatus
    created_at: int
    updated_at: int
    dependencies: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., content: _Optional[str] = ..., status: _Optional[_Union[TodoStatus, str]] = ..., created_at: _Optional[int] = ..., updated_at: _Optional[int] = ..., dependencies: _Optional[_Iterable[str]] = ...) -> None: ...

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
