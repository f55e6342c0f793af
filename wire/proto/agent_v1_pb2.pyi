from google.protobuf import struct_pb2 as _struct_pb2
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
    SIMULATED_MSG_REASON_PLAN_EXECUTION: _ClassVar[SimulatedMsgReason]
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

class TimeoutBehavior(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIMEOUT_BEHAVIOR_UNSPECIFIED: _ClassVar[TimeoutBehavior]
    TIMEOUT_BEHAVIOR_CANCEL: _ClassVar[TimeoutBehavior]
    TIMEOUT_BEHAVIOR_BACKGROUND: _ClassVar[TimeoutBehavior]

class ShellAbortReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHELL_ABORT_REASON_UNSPECIFIED: _ClassVar[ShellAbortReason]
    SHELL_ABORT_REASON_USER_ABORT: _ClassVar[ShellAbortReason]
    SHELL_ABORT_REASON_TIMEOUT: _ClassVar[ShellAbortReason]

class ShellBackgroundReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHELL_BACKGROUND_REASON_UNSPECIFIED: _ClassVar[ShellBackgroundReason]
    SHELL_BACKGROUND_REASON_TIMEOUT: _ClassVar[ShellBackgroundReason]
    SHELL_BACKGROUND_REASON_USER_REQUEST: _ClassVar[ShellBackgroundReason]

class DiagnosticSeverity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DIAGNOSTIC_SEVERITY_UNSPECIFIED: _ClassVar[DiagnosticSeverity]
    DIAGNOSTIC_SEVERITY_ERROR: _ClassVar[DiagnosticSeverity]
    DIAGNOSTIC_SEVERITY_WARNING: _ClassVar[DiagnosticSeverity]
    DIAGNOSTIC_SEVERITY_INFORMATION: _ClassVar[DiagnosticSeverity]
    DIAGNOSTIC_SEVERITY_HINT: _ClassVar[DiagnosticSeverity]

class SubagentExecutionEnvironment(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUBAGENT_EXECUTION_ENVIRONMENT_UNSPECIFIED: _ClassVar[SubagentExecutionEnvironment]
    SUBAGENT_EXECUTION_ENVIRONMENT_LOCAL: _ClassVar[SubagentExecutionEnvironment]
    SUBAGENT_EXECUTION_ENVIRONMENT_CLOUD: _ClassVar[SubagentExecutionEnvironment]

class TaskMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_MODE_UNSPECIFIED: _ClassVar[TaskMode]
    TASK_MODE_AGENT: _ClassVar[TaskMode]
    TASK_MODE_PLAN: _ClassVar[TaskMode]

class SubagentBackgroundReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUBAGENT_BACKGROUND_REASON_UNSPECIFIED: _ClassVar[SubagentBackgroundReason]
    SUBAGENT_BACKGROUND_REASON_AGENT_REQUEST: _ClassVar[SubagentBackgroundReason]
    SUBAGENT_BACKGROUND_REASON_USER_REQUEST: _ClassVar[SubagentBackgroundReason]
    SUBAGENT_BACKGROUND_REASON_QUEUED_FOLLOW_UP: _ClassVar[SubagentBackgroundReason]

class BackgroundTaskCompletionReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BACKGROUND_TASK_COMPLETION_REASON_UNSPECIFIED: _ClassVar[BackgroundTaskCompletionReason]
    BACKGROUND_TASK_COMPLETION_REASON_TASK_FINISHED: _ClassVar[BackgroundTaskCompletionReason]
    BACKGROUND_TASK_COMPLETION_REASON_TASK_PROGRESS: _ClassVar[BackgroundTaskCompletionReason]
    BACKGROUND_TASK_COMPLETION_REASON_WORKER_REPARENTED: _ClassVar[BackgroundTaskCompletionReason]

class BackgroundTaskKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BACKGROUND_TASK_KIND_UNSPECIFIED: _ClassVar[BackgroundTaskKind]
    BACKGROUND_TASK_KIND_SHELL: _ClassVar[BackgroundTaskKind]
    BACKGROUND_TASK_KIND_SUBAGENT: _ClassVar[BackgroundTaskKind]

class BackgroundTaskStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BACKGROUND_TASK_STATUS_UNSPECIFIED: _ClassVar[BackgroundTaskStatus]
    BACKGROUND_TASK_STATUS_SUCCESS: _ClassVar[BackgroundTaskStatus]
    BACKGROUND_TASK_STATUS_ERROR: _ClassVar[BackgroundTaskStatus]
    BACKGROUND_TASK_STATUS_ABORTED: _ClassVar[BackgroundTaskStatus]

class ForceBackgroundShellStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORCE_BACKGROUND_SHELL_STATUS_UNSPECIFIED: _ClassVar[ForceBackgroundShellStatus]
    FORCE_BACKGROUND_SHELL_STATUS_ACCEPTED: _ClassVar[ForceBackgroundShellStatus]
    FORCE_BACKGROUND_SHELL_STATUS_NOT_FOUND: _ClassVar[ForceBackgroundShellStatus]

class ForceBackgroundSubagentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORCE_BACKGROUND_SUBAGENT_STATUS_UNSPECIFIED: _ClassVar[ForceBackgroundSubagentStatus]
    FORCE_BACKGROUND_SUBAGENT_STATUS_ACCEPTED: _ClassVar[ForceBackgroundSubagentStatus]
    FORCE_BACKGROUND_SUBAGENT_STATUS_NOT_FOUND: _ClassVar[ForceBackgroundSubagentStatus]
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
SIMULATED_MSG_REASON_PLAN_EXECUTION: SimulatedMsgReason
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
TIMEOUT_BEHAVIOR_UNSPECIFIED: TimeoutBehavior
TIMEOUT_BEHAVIOR_CANCEL: TimeoutBehavior
TIMEOUT_BEHAVIOR_BACKGROUND: TimeoutBehavior
SHELL_ABORT_REASON_UNSPECIFIED: ShellAbortReason
SHELL_ABORT_REASON_USER_ABORT: ShellAbortReason
SHELL_ABORT_REASON_TIMEOUT: ShellAbortReason
SHELL_BACKGROUND_REASON_UNSPECIFIED: ShellBackgroundReason
SHELL_BACKGROUND_REASON_TIMEOUT: ShellBackgroundReason
SHELL_BACKGROUND_REASON_USER_REQUEST: ShellBackgroundReason
DIAGNOSTIC_SEVERITY_UNSPECIFIED: DiagnosticSeverity
DIAGNOSTIC_SEVERITY_ERROR: DiagnosticSeverity
DIAGNOSTIC_SEVERITY_WARNING: DiagnosticSeverity
DIAGNOSTIC_SEVERITY_INFORMATION: DiagnosticSeverity
DIAGNOSTIC_SEVERITY_HINT: DiagnosticSeverity
SUBAGENT_EXECUTION_ENVIRONMENT_UNSPECIFIED: SubagentExecutionEnvironment
SUBAGENT_EXECUTION_ENVIRONMENT_LOCAL: SubagentExecutionEnvironment
SUBAGENT_EXECUTION_ENVIRONMENT_CLOUD: SubagentExecutionEnvironment
TASK_MODE_UNSPECIFIED: TaskMode
TASK_MODE_AGENT: TaskMode
TASK_MODE_PLAN: TaskMode
SUBAGENT_BACKGROUND_REASON_UNSPECIFIED: SubagentBackgroundReason
SUBAGENT_BACKGROUND_REASON_AGENT_REQUEST: SubagentBackgroundReason
SUBAGENT_BACKGROUND_REASON_USER_REQUEST: SubagentBackgroundReason
SUBAGENT_BACKGROUND_REASON_QUEUED_FOLLOW_UP: SubagentBackgroundReason
BACKGROUND_TASK_COMPLETION_REASON_UNSPECIFIED: BackgroundTaskCompletionReason
BACKGROUND_TASK_COMPLETION_REASON_TASK_FINISHED: BackgroundTaskCompletionReason
BACKGROUND_TASK_COMPLETION_REASON_TASK_PROGRESS: BackgroundTaskCompletionReason
BACKGROUND_TASK_COMPLETION_REASON_WORKER_REPARENTED: BackgroundTaskCompletionReason
BACKGROUND_TASK_KIND_UNSPECIFIED: BackgroundTaskKind
BACKGROUND_TASK_KIND_SHELL: BackgroundTaskKind
BACKGROUND_TASK_KIND_SUBAGENT: BackgroundTaskKind
BACKGROUND_TASK_STATUS_UNSPECIFIED: BackgroundTaskStatus
BACKGROUND_TASK_STATUS_SUCCESS: BackgroundTaskStatus
BACKGROUND_TASK_STATUS_ERROR: BackgroundTaskStatus
BACKGROUND_TASK_STATUS_ABORTED: BackgroundTaskStatus
FORCE_BACKGROUND_SHELL_STATUS_UNSPECIFIED: ForceBackgroundShellStatus
FORCE_BACKGROUND_SHELL_STATUS_ACCEPTED: ForceBackgroundShellStatus
FORCE_BACKGROUND_SHELL_STATUS_NOT_FOUND: ForceBackgroundShellStatus
FORCE_BACKGROUND_SUBAGENT_STATUS_UNSPECIFIED: ForceBackgroundSubagentStatus
FORCE_BACKGROUND_SUBAGENT_STATUS_ACCEPTED: ForceBackgroundSubagentStatus
FORCE_BACKGROUND_SUBAGENT_STATUS_NOT_FOUND: ForceBackgroundSubagentStatus

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
    __slots__ = ("conversation_state", "action", "model_details", "requested_model", "mcp_tools", "conversation_id", "pre_fetched_blobs", "run_id", "subagent_type_name", "conversation_group_id", "subagent_model_overrides", "suppress_subagent_progress_update_tool")
    CONVERSATION_STATE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    MODEL_DETAILS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_FIELD_NUMBER: _ClassVar[int]
    MCP_TOOLS_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    PRE_FETCHED_BLOBS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_MODEL_OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_SUBAGENT_PROGRESS_UPDATE_TOOL_FIELD_NUMBER: _ClassVar[int]
    conversation_state: ConversationStateStructure
    action: ConversationAction
    model_details: ModelDetails
    requested_model: RequestedModel
    mcp_tools: McpTools
    conversation_id: str
    pre_fetched_blobs: _containers.RepeatedCompositeFieldContainer[PreFetchedBlob]
    run_id: str
    subagent_type_name: str
    conversation_group_id: str
    subagent_model_overrides: _containers.RepeatedCompositeFieldContainer[SubagentModelOverride]
    suppress_subagent_progress_update_tool: bool
    def __init__(self, conversation_state: _Optional[_Union[ConversationStateStructure, _Mapping]] = ..., action: _Optional[_Union[ConversationAction, _Mapping]] = ..., model_details: _Optional[_Union[ModelDetails, _Mapping]] = ..., requested_model: _Optional[_Union[RequestedModel, _Mapping]] = ..., mcp_tools: _Optional[_Union[McpTools, _Mapping]] = ..., conversation_id: _Optional[str] = ..., pre_fetched_blobs: _Optional[_Iterable[_Union[PreFetchedBlob, _Mapping]]] = ..., run_id: _Optional[str] = ..., subagent_type_name: _Optional[str] = ..., conversation_group_id: _Optional[str] = ..., subagent_model_overrides: _Optional[_Iterable[_Union[SubagentModelOverride, _Mapping]]] = ..., suppress_subagent_progress_update_tool: _Optional[bool] = ...) -> None: ...

class PreFetchedBlob(_message.Message):
    __slots__ = ("id", "value")
    ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    value: bytes
    def __init__(self, id: _Optional[bytes] = ..., value: _Optional[bytes] = ...) -> None: ...

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
    __slots__ = ("request_context_parts", "user_message_action", "resume_action", "cancel_action", "summarize_action", "shell_command_action", "start_plan_action", "execute_plan_action", "async_ask_question_completion_action", "cancel_subagent_action", "background_task_completion_action", "background_shell_action", "background_subagent_action")
    REQUEST_CONTEXT_PARTS_FIELD_NUMBER: _ClassVar[int]
    USER_MESSAGE_ACTION_FIELD_NUMBER: _ClassVar[int]
    RESUME_ACTION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ACTION_FIELD_NUMBER: _ClassVar[int]
    SUMMARIZE_ACTION_FIELD_NUMBER: _ClassVar[int]
    SHELL_COMMAND_ACTION_FIELD_NUMBER: _ClassVar[int]
    START_PLAN_ACTION_FIELD_NUMBER: _ClassVar[int]
    EXECUTE_PLAN_ACTION_FIELD_NUMBER: _ClassVar[int]
    ASYNC_ASK_QUESTION_COMPLETION_ACTION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_SUBAGENT_ACTION_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_TASK_COMPLETION_ACTION_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_SHELL_ACTION_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_SUBAGENT_ACTION_FIELD_NUMBER: _ClassVar[int]
    request_context_parts: RequestContextPartReferences
    user_message_action: UserMessageAction
    resume_action: ResumeAction
    cancel_action: CancelAction
    summarize_action: SummarizeAction
    shell_command_action: ShellCommandAction
    start_plan_action: StartPlanAction
    execute_plan_action: ExecutePlanAction
    async_ask_question_completion_action: AsyncAskQuestionCompletionAction
    cancel_subagent_action: CancelSubagentAction
    background_task_completion_action: BackgroundTaskCompletionAction
    background_shell_action: BackgroundShellAction
    background_subagent_action: BackgroundSubagentAction
    def __init__(self, request_context_parts: _Optional[_Union[RequestContextPartReferences, _Mapping]] = ..., user_message_action: _Optional[_Union[UserMessageAction, _Mapping]] = ..., resume_action: _Optional[_Union[ResumeAction, _Mapping]] = ..., cancel_action: _Optional[_Union[CancelAction, _Mapping]] = ..., summarize_action: _Optional[_Union[SummarizeAction, _Mapping]] = ..., shell_command_action: _Optional[_Union[ShellCommandAction, _Mapping]] = ..., start_plan_action: _Optional[_Union[StartPlanAction, _Mapping]] = ..., execute_plan_action: _Optional[_Union[ExecutePlanAction, _Mapping]] = ..., async_ask_question_completion_action: _Optional[_Union[AsyncAskQuestionCompletionAction, _Mapping]] = ..., cancel_subagent_action: _Optional[_Union[CancelSubagentAction, _Mapping]] = ..., background_task_completion_action: _Optional[_Union[BackgroundTaskCompletionAction, _Mapping]] = ..., background_shell_action: _Optional[_Union[BackgroundShellAction, _Mapping]] = ..., background_subagent_action: _Optional[_Union[BackgroundSubagentAction, _Mapping]] = ...) -> None: ...

class UserMessageAction(_message.Message):
    __slots__ = ("user_message", "request_context", "prepend_user_messages", "interrupted_pending_tool_call_resolutions")
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PREPEND_USER_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_PENDING_TOOL_CALL_RESOLUTIONS_FIELD_NUMBER: _ClassVar[int]
    user_message: UserMessage
    request_context: RequestContext
    prepend_user_messages: _containers.RepeatedCompositeFieldContainer[UserMessage]
    interrupted_pending_tool_call_resolutions: InterruptedPendingToolCallResolutions
    def __init__(self, user_message: _Optional[_Union[UserMessage, _Mapping]] = ..., request_context: _Optional[_Union[RequestContext, _Mapping]] = ..., prepend_user_messages: _Optional[_Iterable[_Union[UserMessage, _Mapping]]] = ..., interrupted_pending_tool_call_resolutions: _Optional[_Union[InterruptedPendingToolCallResolutions, _Mapping]] = ...) -> None: ...

class InterruptedPendingToolCallResolutions(_message.Message):
    __slots__ = ("resolutions",)
    RESOLUTIONS_FIELD_NUMBER: _ClassVar[int]
    resolutions: _containers.RepeatedCompositeFieldContainer[InterruptedPendingToolCallResolution]
    def __init__(self, resolutions: _Optional[_Iterable[_Union[InterruptedPendingToolCallResolution, _Mapping]]] = ...) -> None: ...

class InterruptedPendingToolCallResolution(_message.Message):
    __slots__ = ("tool_call_id", "shell_result")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SHELL_RESULT_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    shell_result: ShellResult
    def __init__(self, tool_call_id: _Optional[str] = ..., shell_result: _Optional[_Union[ShellResult, _Mapping]] = ...) -> None: ...

class ShellCommandAction(_message.Message):
    __slots__ = ("shell_command", "exec_id")
    SHELL_COMMAND_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    shell_command: ShellCommand
    exec_id: str
    def __init__(self, shell_command: _Optional[_Union[ShellCommand, _Mapping]] = ..., exec_id: _Optional[str] = ...) -> None: ...

class ShellCommand(_message.Message):
    __slots__ = ("command",)
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    command: str
    def __init__(self, command: _Optional[str] = ...) -> None: ...

class ShellOutput(_message.Message):
    __slots__ = ("stdout", "stderr", "exit_code")
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    stdout: str
    stderr: str
    exit_code: int
    def __init__(self, stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ...) -> None: ...

class UserMessage(_message.Message):
    __slots__ = ("text", "message_id", "selected_context", "mode", "is_simulated_msg", "simulated_msg_reason", "subagent_system_reminder", "simulated_message_metadata")
    class SimulatedMessageMetadata(_message.Message):
        __slots__ = ("title", "task_id")
        TITLE_FIELD_NUMBER: _ClassVar[int]
        TASK_ID_FIELD_NUMBER: _ClassVar[int]
        title: str
        task_id: str
        def __init__(self, title: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SELECTED_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    IS_SIMULATED_MSG_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_MSG_REASON_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_SYSTEM_REMINDER_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_MESSAGE_METADATA_FIELD_NUMBER: _ClassVar[int]
    text: str
    message_id: str
    selected_context: SelectedContext
    mode: AgentMode
    is_simulated_msg: bool
    simulated_msg_reason: SimulatedMsgReason
    subagent_system_reminder: str
    simulated_message_metadata: UserMessage.SimulatedMessageMetadata
    def __init__(self, text: _Optional[str] = ..., message_id: _Optional[str] = ..., selected_context: _Optional[_Union[SelectedContext, _Mapping]] = ..., mode: _Optional[_Union[AgentMode, str]] = ..., is_simulated_msg: _Optional[bool] = ..., simulated_msg_reason: _Optional[_Union[SimulatedMsgReason, str]] = ..., subagent_system_reminder: _Optional[str] = ..., simulated_message_metadata: _Optional[_Union[UserMessage.SimulatedMessageMetadata, _Mapping]] = ...) -> None: ...

class RequestContext(_message.Message):
    __slots__ = ("rules", "env", "tools", "git_repos", "debug_mode_config", "cloud_rule", "custom_subagents", "agent_skills", "mcp_meta_tool_options", "non_file_rules", "admin_command_denylist")
    RULES_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    GIT_REPOS_FIELD_NUMBER: _ClassVar[int]
    DEBUG_MODE_CONFIG_FIELD_NUMBER: _ClassVar[int]
    CLOUD_RULE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    AGENT_SKILLS_FIELD_NUMBER: _ClassVar[int]
    MCP_META_TOOL_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    NON_FILE_RULES_FIELD_NUMBER: _ClassVar[int]
    ADMIN_COMMAND_DENYLIST_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[CursorRule]
    env: RequestContextEnv
    tools: _containers.RepeatedCompositeFieldContainer[McpToolDefinition]
    git_repos: _containers.RepeatedCompositeFieldContainer[GitRepoInfo]
    debug_mode_config: DebugModeConfig
    cloud_rule: str
    custom_subagents: _containers.RepeatedCompositeFieldContainer[CustomSubagent]
    agent_skills: _containers.RepeatedCompositeFieldContainer[AgentSkill]
    mcp_meta_tool_options: McpMetaToolOptions
    non_file_rules: _containers.RepeatedCompositeFieldContainer[CursorRule]
    admin_command_denylist: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, rules: _Optional[_Iterable[_Union[CursorRule, _Mapping]]] = ..., env: _Optional[_Union[RequestContextEnv, _Mapping]] = ..., tools: _Optional[_Iterable[_Union[McpToolDefinition, _Mapping]]] = ..., git_repos: _Optional[_Iterable[_Union[GitRepoInfo, _Mapping]]] = ..., debug_mode_config: _Optional[_Union[DebugModeConfig, _Mapping]] = ..., cloud_rule: _Optional[str] = ..., custom_subagents: _Optional[_Iterable[_Union[CustomSubagent, _Mapping]]] = ..., agent_skills: _Optional[_Iterable[_Union[AgentSkill, _Mapping]]] = ..., mcp_meta_tool_options: _Optional[_Union[McpMetaToolOptions, _Mapping]] = ..., non_file_rules: _Optional[_Iterable[_Union[CursorRule, _Mapping]]] = ..., admin_command_denylist: _Optional[_Iterable[str]] = ...) -> None: ...

class RequestContextPartReferences(_message.Message):
    __slots__ = ("rules_blob_id", "rules_byte_length", "skills_blob_id", "skills_byte_length", "subagents_blob_id", "subagents_byte_length", "mcps_blob_id", "mcps_byte_length", "dynamic_context")
    RULES_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    RULES_BYTE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SKILLS_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    SKILLS_BYTE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SUBAGENTS_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENTS_BYTE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MCPS_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    MCPS_BYTE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    rules_blob_id: bytes
    rules_byte_length: int
    skills_blob_id: bytes
    skills_byte_length: int
    subagents_blob_id: bytes
    subagents_byte_length: int
    mcps_blob_id: bytes
    mcps_byte_length: int
    dynamic_context: RequestContext
    def __init__(self, rules_blob_id: _Optional[bytes] = ..., rules_byte_length: _Optional[int] = ..., skills_blob_id: _Optional[bytes] = ..., skills_byte_length: _Optional[int] = ..., subagents_blob_id: _Optional[bytes] = ..., subagents_byte_length: _Optional[int] = ..., mcps_blob_id: _Optional[bytes] = ..., mcps_byte_length: _Optional[int] = ..., dynamic_context: _Optional[_Union[RequestContext, _Mapping]] = ...) -> None: ...

class RequestContextRulesPart(_message.Message):
    __slots__ = ("rules", "non_file_rules", "cloud_rule")
    RULES_FIELD_NUMBER: _ClassVar[int]
    NON_FILE_RULES_FIELD_NUMBER: _ClassVar[int]
    CLOUD_RULE_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[CursorRule]
    non_file_rules: _containers.RepeatedCompositeFieldContainer[CursorRule]
    cloud_rule: str
    def __init__(self, rules: _Optional[_Iterable[_Union[CursorRule, _Mapping]]] = ..., non_file_rules: _Optional[_Iterable[_Union[CursorRule, _Mapping]]] = ..., cloud_rule: _Optional[str] = ...) -> None: ...

class RequestContextSkillsPart(_message.Message):
    __slots__ = ("agent_skills",)
    AGENT_SKILLS_FIELD_NUMBER: _ClassVar[int]
    agent_skills: _containers.RepeatedCompositeFieldContainer[AgentSkill]
    def __init__(self, agent_skills: _Optional[_Iterable[_Union[AgentSkill, _Mapping]]] = ...) -> None: ...

class RequestContextSubagentsPart(_message.Message):
    __slots__ = ("custom_subagents",)
    CUSTOM_SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    custom_subagents: _containers.RepeatedCompositeFieldContainer[CustomSubagent]
    def __init__(self, custom_subagents: _Optional[_Iterable[_Union[CustomSubagent, _Mapping]]] = ...) -> None: ...

class RequestContextMcpsPart(_message.Message):
    __slots__ = ("mcp_meta_tool_options",)
    MCP_META_TOOL_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    mcp_meta_tool_options: McpMetaToolOptions
    def __init__(self, mcp_meta_tool_options: _Optional[_Union[McpMetaToolOptions, _Mapping]] = ...) -> None: ...

class CustomSubagent(_message.Message):
    __slots__ = ("full_path", "name", "description")
    FULL_PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    full_path: str
    name: str
    description: str
    def __init__(self, full_path: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class McpMetaToolOptions(_message.Message):
    __slots__ = ("enabled", "mcp_descriptors")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    MCP_DESCRIPTORS_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    mcp_descriptors: _containers.RepeatedCompositeFieldContainer[McpDescriptor]
    def __init__(self, enabled: _Optional[bool] = ..., mcp_descriptors: _Optional[_Iterable[_Union[McpDescriptor, _Mapping]]] = ...) -> None: ...

class McpDescriptor(_message.Message):
    __slots__ = ("server_name", "server_identifier", "server_use_instructions", "tools")
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    SERVER_USE_INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    server_name: str
    server_identifier: str
    server_use_instructions: str
    tools: _containers.RepeatedCompositeFieldContainer[McpToolDescriptor]
    def __init__(self, server_name: _Optional[str] = ..., server_identifier: _Optional[str] = ..., server_use_instructions: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[McpToolDescriptor, _Mapping]]] = ...) -> None: ...

class McpToolDescriptor(_message.Message):
    __slots__ = ("tool_name", "description", "input_schema", "input_schema_json")
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    tool_name: str
    description: str
    input_schema: _struct_pb2.Value
    input_schema_json: str
    def __init__(self, tool_name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., input_schema_json: _Optional[str] = ...) -> None: ...

class DebugModeConfig(_message.Message):
    __slots__ = ("log_path", "server_endpoint", "session_id")
    LOG_PATH_FIELD_NUMBER: _ClassVar[int]
    SERVER_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    log_path: str
    server_endpoint: str
    session_id: str
    def __init__(self, log_path: _Optional[str] = ..., server_endpoint: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class RequestContextEnv(_message.Message):
    __slots__ = ("os_version", "workspace_paths", "shell", "terminals_folder", "time_zone")
    OS_VERSION_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_PATHS_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    TERMINALS_FOLDER_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    os_version: str
    workspace_paths: _containers.RepeatedScalarFieldContainer[str]
    shell: str
    terminals_folder: str
    time_zone: str
    def __init__(self, os_version: _Optional[str] = ..., workspace_paths: _Optional[_Iterable[str]] = ..., shell: _Optional[str] = ..., terminals_folder: _Optional[str] = ..., time_zone: _Optional[str] = ...) -> None: ...

class GitRepoInfo(_message.Message):
    __slots__ = ("path", "status")
    PATH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    path: str
    status: str
    def __init__(self, path: _Optional[str] = ..., status: _Optional[str] = ...) -> None: ...

class CursorRule(_message.Message):
    __slots__ = ("full_path", "content")
    FULL_PATH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    full_path: str
    content: str
    def __init__(self, full_path: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class AgentSkill(_message.Message):
    __slots__ = ("full_path", "content", "description", "disable_model_invocation")
    FULL_PATH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DISABLE_MODEL_INVOCATION_FIELD_NUMBER: _ClassVar[int]
    full_path: str
    content: str
    description: str
    disable_model_invocation: bool
    def __init__(self, full_path: _Optional[str] = ..., content: _Optional[str] = ..., description: _Optional[str] = ..., disable_model_invocation: _Optional[bool] = ...) -> None: ...

class SelectedContext(_message.Message):
    __slots__ = ("selected_images", "invocation_context", "extra_context", "files", "code_selections", "terminals", "terminal_selections", "external_links", "cursor_rules", "cursor_commands", "selected_skills", "selected_videos")
    SELECTED_IMAGES_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    EXTRA_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    CODE_SELECTIONS_FIELD_NUMBER: _ClassVar[int]
    TERMINALS_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_SELECTIONS_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_LINKS_FIELD_NUMBER: _ClassVar[int]
    CURSOR_RULES_FIELD_NUMBER: _ClassVar[int]
    CURSOR_COMMANDS_FIELD_NUMBER: _ClassVar[int]
    SELECTED_SKILLS_FIELD_NUMBER: _ClassVar[int]
    SELECTED_VIDEOS_FIELD_NUMBER: _ClassVar[int]
    selected_images: _containers.RepeatedCompositeFieldContainer[SelectedImage]
    invocation_context: InvocationContext
    extra_context: _containers.RepeatedScalarFieldContainer[str]
    files: _containers.RepeatedCompositeFieldContainer[SelectedFile]
    code_selections: _containers.RepeatedCompositeFieldContainer[SelectedCodeSelection]
    terminals: _containers.RepeatedCompositeFieldContainer[SelectedTerminal]
    terminal_selections: _containers.RepeatedCompositeFieldContainer[SelectedTerminalSelection]
    external_links: _containers.RepeatedCompositeFieldContainer[SelectedExternalLink]
    cursor_rules: _containers.RepeatedCompositeFieldContainer[SelectedCursorRule]
    cursor_commands: _containers.RepeatedCompositeFieldContainer[SelectedCursorCommand]
    selected_skills: _containers.RepeatedCompositeFieldContainer[AgentSkill]
    selected_videos: _containers.RepeatedCompositeFieldContainer[SelectedVideo]
    def __init__(self, selected_images: _Optional[_Iterable[_Union[SelectedImage, _Mapping]]] = ..., invocation_context: _Optional[_Union[InvocationContext, _Mapping]] = ..., extra_context: _Optional[_Iterable[str]] = ..., files: _Optional[_Iterable[_Union[SelectedFile, _Mapping]]] = ..., code_selections: _Optional[_Iterable[_Union[SelectedCodeSelection, _Mapping]]] = ..., terminals: _Optional[_Iterable[_Union[SelectedTerminal, _Mapping]]] = ..., terminal_selections: _Optional[_Iterable[_Union[SelectedTerminalSelection, _Mapping]]] = ..., external_links: _Optional[_Iterable[_Union[SelectedExternalLink, _Mapping]]] = ..., cursor_rules: _Optional[_Iterable[_Union[SelectedCursorRule, _Mapping]]] = ..., cursor_commands: _Optional[_Iterable[_Union[SelectedCursorCommand, _Mapping]]] = ..., selected_skills: _Optional[_Iterable[_Union[AgentSkill, _Mapping]]] = ..., selected_videos: _Optional[_Iterable[_Union[SelectedVideo, _Mapping]]] = ...) -> None: ...

class SelectedImage(_message.Message):
    __slots__ = ("path", "mime_type", "blob_id", "data", "blob_id_with_data", "prompt_upload_ref")
    class BlobIdWithData(_message.Message):
        __slots__ = ("blob_id", "data")
        BLOB_ID_FIELD_NUMBER: _ClassVar[int]
        DATA_FIELD_NUMBER: _ClassVar[int]
        blob_id: bytes
        data: bytes
        def __init__(self, blob_id: _Optional[bytes] = ..., data: _Optional[bytes] = ...) -> None: ...
    PATH_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    BLOB_ID_WITH_DATA_FIELD_NUMBER: _ClassVar[int]
    PROMPT_UPLOAD_REF_FIELD_NUMBER: _ClassVar[int]
    path: str
    mime_type: str
    blob_id: bytes
    data: bytes
    blob_id_with_data: SelectedImage.BlobIdWithData
    prompt_upload_ref: PromptUploadRef
    def __init__(self, path: _Optional[str] = ..., mime_type: _Optional[str] = ..., blob_id: _Optional[bytes] = ..., data: _Optional[bytes] = ..., blob_id_with_data: _Optional[_Union[SelectedImage.BlobIdWithData, _Mapping]] = ..., prompt_upload_ref: _Optional[_Union[PromptUploadRef, _Mapping]] = ...) -> None: ...

class SelectedVideo(_message.Message):
    __slots__ = ("path", "filename", "materialize_to_filesystem")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    MATERIALIZE_TO_FILESYSTEM_FIELD_NUMBER: _ClassVar[int]
    path: str
    filename: str
    materialize_to_filesystem: bool
    def __init__(self, path: _Optional[str] = ..., filename: _Optional[str] = ..., materialize_to_filesystem: _Optional[bool] = ...) -> None: ...

class PromptUploadRef(_message.Message):
    __slots__ = ("upload_id",)
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    def __init__(self, upload_id: _Optional[str] = ...) -> None: ...

class InvocationContext(_message.Message):
    __slots__ = ("ide_state", "blob_id")
    class IdeState(_message.Message):
        __slots__ = ("visible_files", "recently_viewed_files")
        class File(_message.Message):
            __slots__ = ("path", "cursor_position", "total_lines")
            class CursorPosition(_message.Message):
                __slots__ = ("line",)
                LINE_FIELD_NUMBER: _ClassVar[int]
                line: int
                def __init__(self, line: _Optional[int] = ...) -> None: ...
            PATH_FIELD_NUMBER: _ClassVar[int]
            CURSOR_POSITION_FIELD_NUMBER: _ClassVar[int]
            TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
            path: str
            cursor_position: InvocationContext.IdeState.File.CursorPosition
            total_lines: int
            def __init__(self, path: _Optional[str] = ..., cursor_position: _Optional[_Union[InvocationContext.IdeState.File.CursorPosition, _Mapping]] = ..., total_lines: _Optional[int] = ...) -> None: ...
        VISIBLE_FILES_FIELD_NUMBER: _ClassVar[int]
        RECENTLY_VIEWED_FILES_FIELD_NUMBER: _ClassVar[int]
        visible_files: _containers.RepeatedCompositeFieldContainer[InvocationContext.IdeState.File]
        recently_viewed_files: _containers.RepeatedCompositeFieldContainer[InvocationContext.IdeState.File]
        def __init__(self, visible_files: _Optional[_Iterable[_Union[InvocationContext.IdeState.File, _Mapping]]] = ..., recently_viewed_files: _Optional[_Iterable[_Union[InvocationContext.IdeState.File, _Mapping]]] = ...) -> None: ...
    IDE_STATE_FIELD_NUMBER: _ClassVar[int]
    BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    ide_state: InvocationContext.IdeState
    blob_id: bytes
    def __init__(self, ide_state: _Optional[_Union[InvocationContext.IdeState, _Mapping]] = ..., blob_id: _Optional[bytes] = ...) -> None: ...

class SelectedFile(_message.Message):
    __slots__ = ("content", "path")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    content: str
    path: str
    def __init__(self, content: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class SelectedCodeSelection(_message.Message):
    __slots__ = ("content", "path", "range")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    content: str
    path: str
    range: Range
    def __init__(self, content: _Optional[str] = ..., path: _Optional[str] = ..., range: _Optional[_Union[Range, _Mapping]] = ...) -> None: ...

class SelectedTerminal(_message.Message):
    __slots__ = ("content", "title")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    content: str
    title: str
    def __init__(self, content: _Optional[str] = ..., title: _Optional[str] = ...) -> None: ...

class SelectedTerminalSelection(_message.Message):
    __slots__ = ("content", "title")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    content: str
    title: str
    def __init__(self, content: _Optional[str] = ..., title: _Optional[str] = ...) -> None: ...

class SelectedExternalLink(_message.Message):
    __slots__ = ("url", "pdf_content")
    URL_FIELD_NUMBER: _ClassVar[int]
    PDF_CONTENT_FIELD_NUMBER: _ClassVar[int]
    url: str
    pdf_content: str
    def __init__(self, url: _Optional[str] = ..., pdf_content: _Optional[str] = ...) -> None: ...

class SelectedCursorRule(_message.Message):
    __slots__ = ("rule",)
    RULE_FIELD_NUMBER: _ClassVar[int]
    rule: CursorRule
    def __init__(self, rule: _Optional[_Union[CursorRule, _Mapping]] = ...) -> None: ...

class SelectedCursorCommand(_message.Message):
    __slots__ = ("name", "content")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    name: str
    content: str
    def __init__(self, name: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class ResumeAction(_message.Message):
    __slots__ = ("request_context",)
    REQUEST_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    request_context: RequestContext
    def __init__(self, request_context: _Optional[_Union[RequestContext, _Mapping]] = ...) -> None: ...

class CancelAction(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ExecClientMessage(_message.Message):
    __slots__ = ("id", "exec_id", "local_execution_time_ms", "shell_result", "write_result", "delete_result", "grep_result", "read_result", "redacted_read_result", "diagnostics_result", "mcp_result", "shell_stream", "read_mcp_resource_exec_result", "fetch_result", "subagent_result", "force_background_shell_result", "force_background_subagent_result", "mcp_state_exec_result", "request_context_result")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    LOCAL_EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SHELL_RESULT_FIELD_NUMBER: _ClassVar[int]
    WRITE_RESULT_FIELD_NUMBER: _ClassVar[int]
    DELETE_RESULT_FIELD_NUMBER: _ClassVar[int]
    GREP_RESULT_FIELD_NUMBER: _ClassVar[int]
    READ_RESULT_FIELD_NUMBER: _ClassVar[int]
    REDACTED_READ_RESULT_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_RESULT_FIELD_NUMBER: _ClassVar[int]
    MCP_RESULT_FIELD_NUMBER: _ClassVar[int]
    SHELL_STREAM_FIELD_NUMBER: _ClassVar[int]
    READ_MCP_RESOURCE_EXEC_RESULT_FIELD_NUMBER: _ClassVar[int]
    FETCH_RESULT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RESULT_FIELD_NUMBER: _ClassVar[int]
    FORCE_BACKGROUND_SHELL_RESULT_FIELD_NUMBER: _ClassVar[int]
    FORCE_BACKGROUND_SUBAGENT_RESULT_FIELD_NUMBER: _ClassVar[int]
    MCP_STATE_EXEC_RESULT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CONTEXT_RESULT_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    local_execution_time_ms: int
    shell_result: ShellResult
    write_result: WriteResult
    delete_result: DeleteResult
    grep_result: GrepResult
    read_result: ReadResult
    redacted_read_result: ReadResult
    diagnostics_result: DiagnosticsResult
    mcp_result: McpResult
    shell_stream: ShellStream
    read_mcp_resource_exec_result: ReadMcpResourceExecResult
    fetch_result: FetchResult
    subagent_result: SubagentResult
    force_background_shell_result: ForceBackgroundShellResult
    force_background_subagent_result: ForceBackgroundSubagentResult
    mcp_state_exec_result: McpStateExecResult
    request_context_result: RequestContextResult
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ..., local_execution_time_ms: _Optional[int] = ..., shell_result: _Optional[_Union[ShellResult, _Mapping]] = ..., write_result: _Optional[_Union[WriteResult, _Mapping]] = ..., delete_result: _Optional[_Union[DeleteResult, _Mapping]] = ..., grep_result: _Optional[_Union[GrepResult, _Mapping]] = ..., read_result: _Optional[_Union[ReadResult, _Mapping]] = ..., redacted_read_result: _Optional[_Union[ReadResult, _Mapping]] = ..., diagnostics_result: _Optional[_Union[DiagnosticsResult, _Mapping]] = ..., mcp_result: _Optional[_Union[McpResult, _Mapping]] = ..., shell_stream: _Optional[_Union[ShellStream, _Mapping]] = ..., read_mcp_resource_exec_result: _Optional[_Union[ReadMcpResourceExecResult, _Mapping]] = ..., fetch_result: _Optional[_Union[FetchResult, _Mapping]] = ..., subagent_result: _Optional[_Union[SubagentResult, _Mapping]] = ..., force_background_shell_result: _Optional[_Union[ForceBackgroundShellResult, _Mapping]] = ..., force_background_subagent_result: _Optional[_Union[ForceBackgroundSubagentResult, _Mapping]] = ..., mcp_state_exec_result: _Optional[_Union[McpStateExecResult, _Mapping]] = ..., request_context_result: _Optional[_Union[RequestContextResult, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("id", "web_search_request_response", "ask_question_interaction_response", "generate_image_request_response", "web_fetch_request_response", "switch_mode_request_response", "create_plan_request_response")
    ID_FIELD_NUMBER: _ClassVar[int]
    WEB_SEARCH_REQUEST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ASK_QUESTION_INTERACTION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    GENERATE_IMAGE_REQUEST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    WEB_FETCH_REQUEST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    SWITCH_MODE_REQUEST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CREATE_PLAN_REQUEST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    id: int
    web_search_request_response: WebSearchRequestResponse
    ask_question_interaction_response: AskQuestionInteractionResponse
    generate_image_request_response: GenerateImageRequestResponse
    web_fetch_request_response: WebFetchRequestResponse
    switch_mode_request_response: SwitchModeRequestResponse
    create_plan_request_response: CreatePlanRequestResponse
    def __init__(self, id: _Optional[int] = ..., web_search_request_response: _Optional[_Union[WebSearchRequestResponse, _Mapping]] = ..., ask_question_interaction_response: _Optional[_Union[AskQuestionInteractionResponse, _Mapping]] = ..., generate_image_request_response: _Optional[_Union[GenerateImageRequestResponse, _Mapping]] = ..., web_fetch_request_response: _Optional[_Union[WebFetchRequestResponse, _Mapping]] = ..., switch_mode_request_response: _Optional[_Union[SwitchModeRequestResponse, _Mapping]] = ..., create_plan_request_response: _Optional[_Union[CreatePlanRequestResponse, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("text_delta", "partial_tool_call", "tool_call_delta", "tool_call_started", "tool_call_completed", "thinking_delta", "thinking_completed", "token_delta", "heartbeat", "turn_ended", "summary", "summary_started", "summary_completed")
    TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_STARTED_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    THINKING_DELTA_FIELD_NUMBER: _ClassVar[int]
    THINKING_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_DELTA_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ENDED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_STARTED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    text_delta: TextDeltaUpdate
    partial_tool_call: PartialToolCallUpdate
    tool_call_delta: ToolCallDeltaUpdate
    tool_call_started: ToolCallStartedUpdate
    tool_call_completed: ToolCallCompletedUpdate
    thinking_delta: ThinkingDeltaUpdate
    thinking_completed: ThinkingCompletedUpdate
    token_delta: TokenDeltaUpdate
    heartbeat: HeartbeatUpdate
    turn_ended: TurnEndedUpdate
    summary: SummaryUpdate
    summary_started: SummaryStartedUpdate
    summary_completed: SummaryCompletedUpdate
    def __init__(self, text_delta: _Optional[_Union[TextDeltaUpdate, _Mapping]] = ..., partial_tool_call: _Optional[_Union[PartialToolCallUpdate, _Mapping]] = ..., tool_call_delta: _Optional[_Union[ToolCallDeltaUpdate, _Mapping]] = ..., tool_call_started: _Optional[_Union[ToolCallStartedUpdate, _Mapping]] = ..., tool_call_completed: _Optional[_Union[ToolCallCompletedUpdate, _Mapping]] = ..., thinking_delta: _Optional[_Union[ThinkingDeltaUpdate, _Mapping]] = ..., thinking_completed: _Optional[_Union[ThinkingCompletedUpdate, _Mapping]] = ..., token_delta: _Optional[_Union[TokenDeltaUpdate, _Mapping]] = ..., heartbeat: _Optional[_Union[HeartbeatUpdate, _Mapping]] = ..., turn_ended: _Optional[_Union[TurnEndedUpdate, _Mapping]] = ..., summary: _Optional[_Union[SummaryUpdate, _Mapping]] = ..., summary_started: _Optional[_Union[SummaryStartedUpdate, _Mapping]] = ..., summary_completed: _Optional[_Union[SummaryCompletedUpdate, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("id", "exec_id", "accept_hook_additional_contexts", "write_args", "delete_args", "grep_args", "read_args", "diagnostics_args", "mcp_args", "shell_stream_args", "read_mcp_resource_exec_args", "fetch_args", "subagent_args", "force_background_shell_args", "force_background_subagent_args", "mcp_state_exec_args", "request_context_args")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_HOOK_ADDITIONAL_CONTEXTS_FIELD_NUMBER: _ClassVar[int]
    WRITE_ARGS_FIELD_NUMBER: _ClassVar[int]
    DELETE_ARGS_FIELD_NUMBER: _ClassVar[int]
    GREP_ARGS_FIELD_NUMBER: _ClassVar[int]
    READ_ARGS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_ARGS_FIELD_NUMBER: _ClassVar[int]
    MCP_ARGS_FIELD_NUMBER: _ClassVar[int]
    SHELL_STREAM_ARGS_FIELD_NUMBER: _ClassVar[int]
    READ_MCP_RESOURCE_EXEC_ARGS_FIELD_NUMBER: _ClassVar[int]
    FETCH_ARGS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ARGS_FIELD_NUMBER: _ClassVar[int]
    FORCE_BACKGROUND_SHELL_ARGS_FIELD_NUMBER: _ClassVar[int]
    FORCE_BACKGROUND_SUBAGENT_ARGS_FIELD_NUMBER: _ClassVar[int]
    MCP_STATE_EXEC_ARGS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CONTEXT_ARGS_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    accept_hook_additional_contexts: bool
    write_args: WriteArgs
    delete_args: DeleteArgs
    grep_args: GrepArgs
    read_args: ReadArgs
    diagnostics_args: DiagnosticsArgs
    mcp_args: McpArgs
    shell_stream_args: ShellArgs
    read_mcp_resource_exec_args: ReadMcpResourceExecArgs
    fetch_args: FetchArgs
    subagent_args: SubagentArgs
    force_background_shell_args: ForceBackgroundShellArgs
    force_background_subagent_args: ForceBackgroundSubagentArgs
    mcp_state_exec_args: McpStateExecArgs
    request_context_args: RequestContextArgs
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ..., accept_hook_additional_contexts: _Optional[bool] = ..., write_args: _Optional[_Union[WriteArgs, _Mapping]] = ..., delete_args: _Optional[_Union[DeleteArgs, _Mapping]] = ..., grep_args: _Optional[_Union[GrepArgs, _Mapping]] = ..., read_args: _Optional[_Union[ReadArgs, _Mapping]] = ..., diagnostics_args: _Optional[_Union[DiagnosticsArgs, _Mapping]] = ..., mcp_args: _Optional[_Union[McpArgs, _Mapping]] = ..., shell_stream_args: _Optional[_Union[ShellArgs, _Mapping]] = ..., read_mcp_resource_exec_args: _Optional[_Union[ReadMcpResourceExecArgs, _Mapping]] = ..., fetch_args: _Optional[_Union[FetchArgs, _Mapping]] = ..., subagent_args: _Optional[_Union[SubagentArgs, _Mapping]] = ..., force_background_shell_args: _Optional[_Union[ForceBackgroundShellArgs, _Mapping]] = ..., force_background_subagent_args: _Optional[_Union[ForceBackgroundSubagentArgs, _Mapping]] = ..., mcp_state_exec_args: _Optional[_Union[McpStateExecArgs, _Mapping]] = ..., request_context_args: _Optional[_Union[RequestContextArgs, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("root_prompt_messages_json", "turns", "todos", "pending_tool_calls", "token_details", "summary", "plan", "mode", "summary_archives", "self_summary_count", "read_paths", "communicate_update_states_by_parent_tool_call_id")
    class CommunicateUpdateStatesByParentToolCallIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CommunicateUpdateTurnState
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CommunicateUpdateTurnState, _Mapping]] = ...) -> None: ...
    ROOT_PROMPT_MESSAGES_JSON_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    PENDING_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_DETAILS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_ARCHIVES_FIELD_NUMBER: _ClassVar[int]
    SELF_SUMMARY_COUNT_FIELD_NUMBER: _ClassVar[int]
    READ_PATHS_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATE_UPDATE_STATES_BY_PARENT_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    root_prompt_messages_json: _containers.RepeatedScalarFieldContainer[bytes]
    turns: _containers.RepeatedScalarFieldContainer[bytes]
    todos: _containers.RepeatedScalarFieldContainer[bytes]
    pending_tool_calls: _containers.RepeatedScalarFieldContainer[str]
    token_details: ConversationTokenDetails
    summary: bytes
    plan: bytes
    mode: AgentMode
    summary_archives: _containers.RepeatedScalarFieldContainer[bytes]
    self_summary_count: int
    read_paths: _containers.RepeatedScalarFieldContainer[str]
    communicate_update_states_by_parent_tool_call_id: _containers.MessageMap[str, CommunicateUpdateTurnState]
    def __init__(self, root_prompt_messages_json: _Optional[_Iterable[bytes]] = ..., turns: _Optional[_Iterable[bytes]] = ..., todos: _Optional[_Iterable[bytes]] = ..., pending_tool_calls: _Optional[_Iterable[str]] = ..., token_details: _Optional[_Union[ConversationTokenDetails, _Mapping]] = ..., summary: _Optional[bytes] = ..., plan: _Optional[bytes] = ..., mode: _Optional[_Union[AgentMode, str]] = ..., summary_archives: _Optional[_Iterable[bytes]] = ..., self_summary_count: _Optional[int] = ..., read_paths: _Optional[_Iterable[str]] = ..., communicate_update_states_by_parent_tool_call_id: _Optional[_Mapping[str, CommunicateUpdateTurnState]] = ...) -> None: ...

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
    __slots__ = ("agent_conversation_turn", "shell_conversation_turn")
    AGENT_CONVERSATION_TURN_FIELD_NUMBER: _ClassVar[int]
    SHELL_CONVERSATION_TURN_FIELD_NUMBER: _ClassVar[int]
    agent_conversation_turn: AgentConversationTurnStructure
    shell_conversation_turn: ShellConversationTurnStructure
    def __init__(self, agent_conversation_turn: _Optional[_Union[AgentConversationTurnStructure, _Mapping]] = ..., shell_conversation_turn: _Optional[_Union[ShellConversationTurnStructure, _Mapping]] = ...) -> None: ...

class ShellConversationTurnStructure(_message.Message):
    __slots__ = ("shell_command", "shell_output")
    SHELL_COMMAND_FIELD_NUMBER: _ClassVar[int]
    SHELL_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    shell_command: bytes
    shell_output: bytes
    def __init__(self, shell_command: _Optional[bytes] = ..., shell_output: _Optional[bytes] = ...) -> None: ...

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
    __slots__ = ("tool_call_id", "started_at_ms", "completed_at_ms", "shell_tool_call", "delete_tool_call", "glob_tool_call", "grep_tool_call", "read_tool_call", "update_todos_tool_call", "edit_tool_call", "read_lints_tool_call", "mcp_tool_call", "web_search_tool_call", "read_mcp_resource_tool_call", "create_plan_tool_call", "ask_question_tool_call", "generate_image_tool_call", "switch_mode_tool_call", "await_tool_call", "web_fetch_tool_call", "task_tool_call", "communicate_update_tool_call", "get_mcp_tools_tool_call")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SHELL_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    DELETE_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    GLOB_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    GREP_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    READ_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TODOS_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    EDIT_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    READ_LINTS_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    MCP_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    WEB_SEARCH_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    READ_MCP_RESOURCE_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    CREATE_PLAN_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    ASK_QUESTION_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    GENERATE_IMAGE_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    SWITCH_MODE_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    AWAIT_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    WEB_FETCH_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TASK_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATE_UPDATE_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    GET_MCP_TOOLS_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    started_at_ms: int
    completed_at_ms: int
    shell_tool_call: ShellToolCall
    delete_tool_call: DeleteToolCall
    glob_tool_call: GlobToolCall
    grep_tool_call: GrepToolCall
    read_tool_call: ReadToolCall
    update_todos_tool_call: UpdateTodosToolCall
    edit_tool_call: EditToolCall
    read_lints_tool_call: ReadLintsToolCall
    mcp_tool_call: McpToolCall
    web_search_tool_call: WebSearchToolCall
    read_mcp_resource_tool_call: ReadMcpResourceToolCall
    create_plan_tool_call: CreatePlanToolCall
    ask_question_tool_call: AskQuestionToolCall
    generate_image_tool_call: GenerateImageToolCall
    switch_mode_tool_call: SwitchModeToolCall
    await_tool_call: AwaitToolCall
    web_fetch_tool_call: WebFetchToolCall
    task_tool_call: TaskToolCall
    communicate_update_tool_call: CommunicateUpdateToolCall
    get_mcp_tools_tool_call: GetMcpToolsToolCall
    def __init__(self, tool_call_id: _Optional[str] = ..., started_at_ms: _Optional[int] = ..., completed_at_ms: _Optional[int] = ..., shell_tool_call: _Optional[_Union[ShellToolCall, _Mapping]] = ..., delete_tool_call: _Optional[_Union[DeleteToolCall, _Mapping]] = ..., glob_tool_call: _Optional[_Union[GlobToolCall, _Mapping]] = ..., grep_tool_call: _Optional[_Union[GrepToolCall, _Mapping]] = ..., read_tool_call: _Optional[_Union[ReadToolCall, _Mapping]] = ..., update_todos_tool_call: _Optional[_Union[UpdateTodosToolCall, _Mapping]] = ..., edit_tool_call: _Optional[_Union[EditToolCall, _Mapping]] = ..., read_lints_tool_call: _Optional[_Union[ReadLintsToolCall, _Mapping]] = ..., mcp_tool_call: _Optional[_Union[McpToolCall, _Mapping]] = ..., web_search_tool_call: _Optional[_Union[WebSearchToolCall, _Mapping]] = ..., read_mcp_resource_tool_call: _Optional[_Union[ReadMcpResourceToolCall, _Mapping]] = ..., create_plan_tool_call: _Optional[_Union[CreatePlanToolCall, _Mapping]] = ..., ask_question_tool_call: _Optional[_Union[AskQuestionToolCall, _Mapping]] = ..., generate_image_tool_call: _Optional[_Union[GenerateImageToolCall, _Mapping]] = ..., switch_mode_tool_call: _Optional[_Union[SwitchModeToolCall, _Mapping]] = ..., await_tool_call: _Optional[_Union[AwaitToolCall, _Mapping]] = ..., web_fetch_tool_call: _Optional[_Union[WebFetchToolCall, _Mapping]] = ..., task_tool_call: _Optional[_Union[TaskToolCall, _Mapping]] = ..., communicate_update_tool_call: _Optional[_Union[CommunicateUpdateToolCall, _Mapping]] = ..., get_mcp_tools_tool_call: _Optional[_Union[GetMcpToolsToolCall, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("id", "web_search_request_query", "ask_question_interaction_query", "generate_image_request_query", "web_fetch_request_query", "switch_mode_request_query", "create_plan_request_query")
    ID_FIELD_NUMBER: _ClassVar[int]
    WEB_SEARCH_REQUEST_QUERY_FIELD_NUMBER: _ClassVar[int]
    ASK_QUESTION_INTERACTION_QUERY_FIELD_NUMBER: _ClassVar[int]
    GENERATE_IMAGE_REQUEST_QUERY_FIELD_NUMBER: _ClassVar[int]
    WEB_FETCH_REQUEST_QUERY_FIELD_NUMBER: _ClassVar[int]
    SWITCH_MODE_REQUEST_QUERY_FIELD_NUMBER: _ClassVar[int]
    CREATE_PLAN_REQUEST_QUERY_FIELD_NUMBER: _ClassVar[int]
    id: int
    web_search_request_query: WebSearchRequestQuery
    ask_question_interaction_query: AskQuestionInteractionQuery
    generate_image_request_query: GenerateImageRequestQuery
    web_fetch_request_query: WebFetchRequestQuery
    switch_mode_request_query: SwitchModeRequestQuery
    create_plan_request_query: CreatePlanRequestQuery
    def __init__(self, id: _Optional[int] = ..., web_search_request_query: _Optional[_Union[WebSearchRequestQuery, _Mapping]] = ..., ask_question_interaction_query: _Optional[_Union[AskQuestionInteractionQuery, _Mapping]] = ..., generate_image_request_query: _Optional[_Union[GenerateImageRequestQuery, _Mapping]] = ..., web_fetch_request_query: _Optional[_Union[WebFetchRequestQuery, _Mapping]] = ..., switch_mode_request_query: _Optional[_Union[SwitchModeRequestQuery, _Mapping]] = ..., create_plan_request_query: _Optional[_Union[CreatePlanRequestQuery, _Mapping]] = ...) -> None: ...

class AskQuestionInteractionQuery(_message.Message):
    __slots__ = ("args", "tool_call_id")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    args: AskQuestionArgs
    tool_call_id: str
    def __init__(self, args: _Optional[_Union[AskQuestionArgs, _Mapping]] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class AskQuestionInteractionResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: AskQuestionResult
    def __init__(self, result: _Optional[_Union[AskQuestionResult, _Mapping]] = ...) -> None: ...

class AskQuestionArgs(_message.Message):
    __slots__ = ("title", "questions", "run_async", "async_original_tool_call_id")
    class Option(_message.Message):
        __slots__ = ("id", "label")
        ID_FIELD_NUMBER: _ClassVar[int]
        LABEL_FIELD_NUMBER: _ClassVar[int]
        id: str
        label: str
        def __init__(self, id: _Optional[str] = ..., label: _Optional[str] = ...) -> None: ...
    class Question(_message.Message):
        __slots__ = ("id", "prompt", "options", "allow_multiple")
        ID_FIELD_NUMBER: _ClassVar[int]
        PROMPT_FIELD_NUMBER: _ClassVar[int]
        OPTIONS_FIELD_NUMBER: _ClassVar[int]
        ALLOW_MULTIPLE_FIELD_NUMBER: _ClassVar[int]
        id: str
        prompt: str
        options: _containers.RepeatedCompositeFieldContainer[AskQuestionArgs.Option]
        allow_multiple: bool
        def __init__(self, id: _Optional[str] = ..., prompt: _Optional[str] = ..., options: _Optional[_Iterable[_Union[AskQuestionArgs.Option, _Mapping]]] = ..., allow_multiple: _Optional[bool] = ...) -> None: ...
    TITLE_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    RUN_ASYNC_FIELD_NUMBER: _ClassVar[int]
    ASYNC_ORIGINAL_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    title: str
    questions: _containers.RepeatedCompositeFieldContainer[AskQuestionArgs.Question]
    run_async: bool
    async_original_tool_call_id: str
    def __init__(self, title: _Optional[str] = ..., questions: _Optional[_Iterable[_Union[AskQuestionArgs.Question, _Mapping]]] = ..., run_async: _Optional[bool] = ..., async_original_tool_call_id: _Optional[str] = ...) -> None: ...

class AskQuestionResult(_message.Message):
    __slots__ = ("success", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ASYNC_FIELD_NUMBER: _ClassVar[int]
    success: AskQuestionSuccess
    error: AskQuestionError
    rejected: AskQuestionRejected
    def __init__(self, success: _Optional[_Union[AskQuestionSuccess, _Mapping]] = ..., error: _Optional[_Union[AskQuestionError, _Mapping]] = ..., rejected: _Optional[_Union[AskQuestionRejected, _Mapping]] = ..., **kwargs) -> None: ...

class AskQuestionSuccess(_message.Message):
    __slots__ = ("answers",)
    class Answer(_message.Message):
        __slots__ = ("question_id", "selected_option_ids", "freeform_text")
        QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
        SELECTED_OPTION_IDS_FIELD_NUMBER: _ClassVar[int]
        FREEFORM_TEXT_FIELD_NUMBER: _ClassVar[int]
        question_id: str
        selected_option_ids: _containers.RepeatedScalarFieldContainer[str]
        freeform_text: str
        def __init__(self, question_id: _Optional[str] = ..., selected_option_ids: _Optional[_Iterable[str]] = ..., freeform_text: _Optional[str] = ...) -> None: ...
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[AskQuestionSuccess.Answer]
    def __init__(self, answers: _Optional[_Iterable[_Union[AskQuestionSuccess.Answer, _Mapping]]] = ...) -> None: ...

class AskQuestionError(_message.Message):
    __slots__ = ("error_message",)
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    def __init__(self, error_message: _Optional[str] = ...) -> None: ...

class AskQuestionRejected(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class AskQuestionAsync(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AskQuestionToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: AskQuestionArgs
    result: AskQuestionResult
    def __init__(self, args: _Optional[_Union[AskQuestionArgs, _Mapping]] = ..., result: _Optional[_Union[AskQuestionResult, _Mapping]] = ...) -> None: ...

class SwitchModeRequestQuery(_message.Message):
    __slots__ = ("args",)
    ARGS_FIELD_NUMBER: _ClassVar[int]
    args: SwitchModeArgs
    def __init__(self, args: _Optional[_Union[SwitchModeArgs, _Mapping]] = ...) -> None: ...

class SwitchModeRequestResponse(_message.Message):
    __slots__ = ("approved", "rejected")
    class Approved(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class Rejected(_message.Message):
        __slots__ = ("reason",)
        REASON_FIELD_NUMBER: _ClassVar[int]
        reason: str
        def __init__(self, reason: _Optional[str] = ...) -> None: ...
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    approved: SwitchModeRequestResponse.Approved
    rejected: SwitchModeRequestResponse.Rejected
    def __init__(self, approved: _Optional[_Union[SwitchModeRequestResponse.Approved, _Mapping]] = ..., rejected: _Optional[_Union[SwitchModeRequestResponse.Rejected, _Mapping]] = ...) -> None: ...

class SwitchModeArgs(_message.Message):
    __slots__ = ("target_mode_id", "explanation", "tool_call_id")
    TARGET_MODE_ID_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    target_mode_id: str
    explanation: str
    tool_call_id: str
    def __init__(self, target_mode_id: _Optional[str] = ..., explanation: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class SwitchModeResult(_message.Message):
    __slots__ = ("success", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    success: SwitchModeSuccess
    error: SwitchModeError
    rejected: SwitchModeRejected
    def __init__(self, success: _Optional[_Union[SwitchModeSuccess, _Mapping]] = ..., error: _Optional[_Union[SwitchModeError, _Mapping]] = ..., rejected: _Optional[_Union[SwitchModeRejected, _Mapping]] = ...) -> None: ...

class SwitchModeSuccess(_message.Message):
    __slots__ = ("from_mode_id", "to_mode_id")
    FROM_MODE_ID_FIELD_NUMBER: _ClassVar[int]
    TO_MODE_ID_FIELD_NUMBER: _ClassVar[int]
    from_mode_id: str
    to_mode_id: str
    def __init__(self, from_mode_id: _Optional[str] = ..., to_mode_id: _Optional[str] = ...) -> None: ...

class SwitchModeError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class SwitchModeRejected(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class SwitchModeToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: SwitchModeArgs
    result: SwitchModeResult
    def __init__(self, args: _Optional[_Union[SwitchModeArgs, _Mapping]] = ..., result: _Optional[_Union[SwitchModeResult, _Mapping]] = ...) -> None: ...

class CreatePlanRequestQuery(_message.Message):
    __slots__ = ("args", "tool_call_id")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    args: CreatePlanArgs
    tool_call_id: str
    def __init__(self, args: _Optional[_Union[CreatePlanArgs, _Mapping]] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class CreatePlanRequestResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: CreatePlanResult
    def __init__(self, result: _Optional[_Union[CreatePlanResult, _Mapping]] = ...) -> None: ...

class CreatePlanArgs(_message.Message):
    __slots__ = ("plan", "todos", "overview", "name")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    OVERVIEW_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    plan: str
    todos: _containers.RepeatedCompositeFieldContainer[TodoItem]
    overview: str
    name: str
    def __init__(self, plan: _Optional[str] = ..., todos: _Optional[_Iterable[_Union[TodoItem, _Mapping]]] = ..., overview: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CreatePlanResult(_message.Message):
    __slots__ = ("plan_uri", "success", "error")
    PLAN_URI_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    plan_uri: str
    success: CreatePlanSuccess
    error: CreatePlanError
    def __init__(self, plan_uri: _Optional[str] = ..., success: _Optional[_Union[CreatePlanSuccess, _Mapping]] = ..., error: _Optional[_Union[CreatePlanError, _Mapping]] = ...) -> None: ...

class CreatePlanSuccess(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CreatePlanError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class CreatePlanToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: CreatePlanArgs
    result: CreatePlanResult
    def __init__(self, args: _Optional[_Union[CreatePlanArgs, _Mapping]] = ..., result: _Optional[_Union[CreatePlanResult, _Mapping]] = ...) -> None: ...

class ConversationPlan(_message.Message):
    __slots__ = ("plan",)
    PLAN_FIELD_NUMBER: _ClassVar[int]
    plan: str
    def __init__(self, plan: _Optional[str] = ...) -> None: ...

class StartPlanAction(_message.Message):
    __slots__ = ("user_message", "request_context")
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    user_message: UserMessage
    request_context: RequestContext
    def __init__(self, user_message: _Optional[_Union[UserMessage, _Mapping]] = ..., request_context: _Optional[_Union[RequestContext, _Mapping]] = ...) -> None: ...

class ExecutePlanAction(_message.Message):
    __slots__ = ("request_context", "plan", "plan_file_uri", "plan_file_content", "execution_mode")
    REQUEST_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PLAN_FILE_URI_FIELD_NUMBER: _ClassVar[int]
    PLAN_FILE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_MODE_FIELD_NUMBER: _ClassVar[int]
    request_context: RequestContext
    plan: ConversationPlan
    plan_file_uri: str
    plan_file_content: str
    execution_mode: AgentMode
    def __init__(self, request_context: _Optional[_Union[RequestContext, _Mapping]] = ..., plan: _Optional[_Union[ConversationPlan, _Mapping]] = ..., plan_file_uri: _Optional[str] = ..., plan_file_content: _Optional[str] = ..., execution_mode: _Optional[_Union[AgentMode, str]] = ...) -> None: ...

class AsyncAskQuestionCompletionAction(_message.Message):
    __slots__ = ("original_tool_call_id", "original_args", "result")
    ORIGINAL_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    original_tool_call_id: str
    original_args: AskQuestionArgs
    result: AskQuestionResult
    def __init__(self, original_tool_call_id: _Optional[str] = ..., original_args: _Optional[_Union[AskQuestionArgs, _Mapping]] = ..., result: _Optional[_Union[AskQuestionResult, _Mapping]] = ...) -> None: ...

class ToolCallStartedUpdate(_message.Message):
    __slots__ = ("call_id", "tool_call", "model_call_id")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_call: ToolCall
    model_call_id: str
    def __init__(self, call_id: _Optional[str] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., model_call_id: _Optional[str] = ...) -> None: ...

class ToolCallCompletedUpdate(_message.Message):
    __slots__ = ("call_id", "tool_call", "model_call_id")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_call: ToolCall
    model_call_id: str
    def __init__(self, call_id: _Optional[str] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., model_call_id: _Optional[str] = ...) -> None: ...

class ToolCallDeltaUpdate(_message.Message):
    __slots__ = ("call_id", "tool_call_delta", "model_call_id")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_DELTA_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_call_delta: ToolCallDelta
    model_call_id: str
    def __init__(self, call_id: _Optional[str] = ..., tool_call_delta: _Optional[_Union[ToolCallDelta, _Mapping]] = ..., model_call_id: _Optional[str] = ...) -> None: ...

class PartialToolCallUpdate(_message.Message):
    __slots__ = ("call_id", "tool_call", "args_text_delta", "model_call_id")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    ARGS_TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_call: ToolCall
    args_text_delta: str
    model_call_id: str
    def __init__(self, call_id: _Optional[str] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., args_text_delta: _Optional[str] = ..., model_call_id: _Optional[str] = ...) -> None: ...

class ToolCallDelta(_message.Message):
    __slots__ = ("shell_tool_call_delta", "edit_tool_call_delta")
    SHELL_TOOL_CALL_DELTA_FIELD_NUMBER: _ClassVar[int]
    EDIT_TOOL_CALL_DELTA_FIELD_NUMBER: _ClassVar[int]
    shell_tool_call_delta: ShellToolCallDelta
    edit_tool_call_delta: EditToolCallDelta
    def __init__(self, shell_tool_call_delta: _Optional[_Union[ShellToolCallDelta, _Mapping]] = ..., edit_tool_call_delta: _Optional[_Union[EditToolCallDelta, _Mapping]] = ...) -> None: ...

class EditToolCallDelta(_message.Message):
    __slots__ = ("stream_content_delta",)
    STREAM_CONTENT_DELTA_FIELD_NUMBER: _ClassVar[int]
    stream_content_delta: str
    def __init__(self, stream_content_delta: _Optional[str] = ...) -> None: ...

class ShellToolCallDelta(_message.Message):
    __slots__ = ("stdout", "stderr")
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    stdout: ShellToolCallStdoutDelta
    stderr: ShellToolCallStderrDelta
    def __init__(self, stdout: _Optional[_Union[ShellToolCallStdoutDelta, _Mapping]] = ..., stderr: _Optional[_Union[ShellToolCallStderrDelta, _Mapping]] = ...) -> None: ...

class ShellToolCallStdoutDelta(_message.Message):
    __slots__ = ("content",)
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: str
    def __init__(self, content: _Optional[str] = ...) -> None: ...

class ShellToolCallStderrDelta(_message.Message):
    __slots__ = ("content",)
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: str
    def __init__(self, content: _Optional[str] = ...) -> None: ...

class ShellArgs(_message.Message):
    __slots__ = ("command", "working_directory", "timeout", "tool_call_id", "file_output_threshold_bytes", "is_background", "skip_approval", "timeout_behavior", "hard_timeout", "description", "close_stdin", "output_notification", "smart_mode_approval", "conversation_id", "admin_command_denylist")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_OUTPUT_THRESHOLD_BYTES_FIELD_NUMBER: _ClassVar[int]
    IS_BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    SKIP_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    HARD_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CLOSE_STDIN_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    SMART_MODE_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    ADMIN_COMMAND_DENYLIST_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    timeout: int
    tool_call_id: str
    file_output_threshold_bytes: int
    is_background: bool
    skip_approval: bool
    timeout_behavior: TimeoutBehavior
    hard_timeout: int
    description: str
    close_stdin: bool
    output_notification: ShellOutputNotificationConfig
    smart_mode_approval: SmartModeApproval
    conversation_id: str
    admin_command_denylist: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., timeout: _Optional[int] = ..., tool_call_id: _Optional[str] = ..., file_output_threshold_bytes: _Optional[int] = ..., is_background: _Optional[bool] = ..., skip_approval: _Optional[bool] = ..., timeout_behavior: _Optional[_Union[TimeoutBehavior, str]] = ..., hard_timeout: _Optional[int] = ..., description: _Optional[str] = ..., close_stdin: _Optional[bool] = ..., output_notification: _Optional[_Union[ShellOutputNotificationConfig, _Mapping]] = ..., smart_mode_approval: _Optional[_Union[SmartModeApproval, _Mapping]] = ..., conversation_id: _Optional[str] = ..., admin_command_denylist: _Optional[_Iterable[str]] = ...) -> None: ...

class ShellOutputNotificationConfig(_message.Message):
    __slots__ = ("pattern", "reason", "debounce", "notification_limit")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_LIMIT_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    reason: str
    debounce: float
    notification_limit: int
    def __init__(self, pattern: _Optional[str] = ..., reason: _Optional[str] = ..., debounce: _Optional[float] = ..., notification_limit: _Optional[int] = ...) -> None: ...

class SmartModeApproval(_message.Message):
    __slots__ = ("request_id", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    reason: str
    def __init__(self, request_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ShellStream(_message.Message):
    __slots__ = ("stdout", "stderr", "exit", "start", "rejected", "permission_denied", "backgrounded", "sandbox_unsupported")
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    BACKGROUNDED_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_UNSUPPORTED_FIELD_NUMBER: _ClassVar[int]
    stdout: ShellStreamStdout
    stderr: ShellStreamStderr
    exit: ShellStreamExit
    start: ShellStreamStart
    rejected: ShellRejected
    permission_denied: ShellPermissionDenied
    backgrounded: ShellStreamBackgrounded
    sandbox_unsupported: ShellSandboxUnsupported
    def __init__(self, stdout: _Optional[_Union[ShellStreamStdout, _Mapping]] = ..., stderr: _Optional[_Union[ShellStreamStderr, _Mapping]] = ..., exit: _Optional[_Union[ShellStreamExit, _Mapping]] = ..., start: _Optional[_Union[ShellStreamStart, _Mapping]] = ..., rejected: _Optional[_Union[ShellRejected, _Mapping]] = ..., permission_denied: _Optional[_Union[ShellPermissionDenied, _Mapping]] = ..., backgrounded: _Optional[_Union[ShellStreamBackgrounded, _Mapping]] = ..., sandbox_unsupported: _Optional[_Union[ShellSandboxUnsupported, _Mapping]] = ...) -> None: ...

class ShellStreamStdout(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: str
    def __init__(self, data: _Optional[str] = ...) -> None: ...

class ShellStreamStderr(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: str
    def __init__(self, data: _Optional[str] = ...) -> None: ...

class ShellStreamExit(_message.Message):
    __slots__ = ("code", "cwd", "output_location", "aborted", "abort_reason", "local_execution_time_ms")
    CODE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LOCATION_FIELD_NUMBER: _ClassVar[int]
    ABORTED_FIELD_NUMBER: _ClassVar[int]
    ABORT_REASON_FIELD_NUMBER: _ClassVar[int]
    LOCAL_EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    code: int
    cwd: str
    output_location: OutputLocation
    aborted: bool
    abort_reason: ShellAbortReason
    local_execution_time_ms: int
    def __init__(self, code: _Optional[int] = ..., cwd: _Optional[str] = ..., output_location: _Optional[_Union[OutputLocation, _Mapping]] = ..., aborted: _Optional[bool] = ..., abort_reason: _Optional[_Union[ShellAbortReason, str]] = ..., local_execution_time_ms: _Optional[int] = ...) -> None: ...

class ShellStreamStart(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShellStreamBackgrounded(_message.Message):
    __slots__ = ("shell_id", "command", "working_directory", "pid", "ms_to_wait", "reason")
    SHELL_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    MS_TO_WAIT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    shell_id: int
    command: str
    working_directory: str
    pid: int
    ms_to_wait: int
    reason: ShellBackgroundReason
    def __init__(self, shell_id: _Optional[int] = ..., command: _Optional[str] = ..., working_directory: _Optional[str] = ..., pid: _Optional[int] = ..., ms_to_wait: _Optional[int] = ..., reason: _Optional[_Union[ShellBackgroundReason, str]] = ...) -> None: ...

class ShellRejected(_message.Message):
    __slots__ = ("command", "working_directory", "reason", "is_readonly")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    reason: str
    is_readonly: bool
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., reason: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class ShellPermissionDenied(_message.Message):
    __slots__ = ("command", "working_directory", "error", "is_readonly")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    error: str
    is_readonly: bool
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., error: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class ShellSandboxUnsupported(_message.Message):
    __slots__ = ("command", "working_directory", "sandbox_policy_type", "reason", "is_readonly")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_POLICY_TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    sandbox_policy_type: str
    reason: str
    is_readonly: bool
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., sandbox_policy_type: _Optional[str] = ..., reason: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class OutputLocation(_message.Message):
    __slots__ = ("file_path", "size_bytes", "line_count")
    FILE_PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    LINE_COUNT_FIELD_NUMBER: _ClassVar[int]
    file_path: str
    size_bytes: int
    line_count: int
    def __init__(self, file_path: _Optional[str] = ..., size_bytes: _Optional[int] = ..., line_count: _Optional[int] = ...) -> None: ...

class ShellResult(_message.Message):
    __slots__ = ("is_background", "terminals_folder", "pid", "success", "failure", "timeout", "rejected", "spawn_error", "permission_denied")
    IS_BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    TERMINALS_FOLDER_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    SPAWN_ERROR_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    is_background: bool
    terminals_folder: str
    pid: int
    success: ShellSuccess
    failure: ShellFailure
    timeout: ShellTimeout
    rejected: ShellRejected
    spawn_error: ShellSpawnError
    permission_denied: ShellPermissionDenied
    def __init__(self, is_background: _Optional[bool] = ..., terminals_folder: _Optional[str] = ..., pid: _Optional[int] = ..., success: _Optional[_Union[ShellSuccess, _Mapping]] = ..., failure: _Optional[_Union[ShellFailure, _Mapping]] = ..., timeout: _Optional[_Union[ShellTimeout, _Mapping]] = ..., rejected: _Optional[_Union[ShellRejected, _Mapping]] = ..., spawn_error: _Optional[_Union[ShellSpawnError, _Mapping]] = ..., permission_denied: _Optional[_Union[ShellPermissionDenied, _Mapping]] = ...) -> None: ...

class ShellSuccess(_message.Message):
    __slots__ = ("command", "working_directory", "exit_code", "signal", "stdout", "stderr", "execution_time", "output_location", "shell_id", "interleaved_output", "pid", "ms_to_wait", "local_execution_time_ms", "background_reason")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LOCATION_FIELD_NUMBER: _ClassVar[int]
    SHELL_ID_FIELD_NUMBER: _ClassVar[int]
    INTERLEAVED_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    MS_TO_WAIT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_REASON_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    exit_code: int
    signal: str
    stdout: str
    stderr: str
    execution_time: int
    output_location: OutputLocation
    shell_id: int
    interleaved_output: str
    pid: int
    ms_to_wait: int
    local_execution_time_ms: int
    background_reason: ShellBackgroundReason
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., exit_code: _Optional[int] = ..., signal: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., execution_time: _Optional[int] = ..., output_location: _Optional[_Union[OutputLocation, _Mapping]] = ..., shell_id: _Optional[int] = ..., interleaved_output: _Optional[str] = ..., pid: _Optional[int] = ..., ms_to_wait: _Optional[int] = ..., local_execution_time_ms: _Optional[int] = ..., background_reason: _Optional[_Union[ShellBackgroundReason, str]] = ...) -> None: ...

class ShellFailure(_message.Message):
    __slots__ = ("command", "working_directory", "exit_code", "signal", "stdout", "stderr", "execution_time", "output_location", "interleaved_output", "abort_reason", "aborted", "local_execution_time_ms")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LOCATION_FIELD_NUMBER: _ClassVar[int]
    INTERLEAVED_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ABORT_REASON_FIELD_NUMBER: _ClassVar[int]
    ABORTED_FIELD_NUMBER: _ClassVar[int]
    LOCAL_EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    exit_code: int
    signal: str
    stdout: str
    stderr: str
    execution_time: int
    output_location: OutputLocation
    interleaved_output: str
    abort_reason: ShellAbortReason
    aborted: bool
    local_execution_time_ms: int
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., exit_code: _Optional[int] = ..., signal: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., execution_time: _Optional[int] = ..., output_location: _Optional[_Union[OutputLocation, _Mapping]] = ..., interleaved_output: _Optional[str] = ..., abort_reason: _Optional[_Union[ShellAbortReason, str]] = ..., aborted: _Optional[bool] = ..., local_execution_time_ms: _Optional[int] = ...) -> None: ...

class ShellTimeout(_message.Message):
    __slots__ = ("command", "working_directory", "timeout_ms")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    timeout_ms: int
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ShellSpawnError(_message.Message):
    __slots__ = ("command", "working_directory", "error")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    error: str
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ShellToolCall(_message.Message):
    __slots__ = ("args", "result", "description")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    args: ShellArgs
    result: ShellResult
    description: str
    def __init__(self, args: _Optional[_Union[ShellArgs, _Mapping]] = ..., result: _Optional[_Union[ShellResult, _Mapping]] = ..., description: _Optional[str] = ...) -> None: ...

class ReadArgs(_message.Message):
    __slots__ = ("path", "tool_call_id", "offset", "limit")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    path: str
    tool_call_id: str
    offset: int
    limit: int
    def __init__(self, path: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ReadResult(_message.Message):
    __slots__ = ("success", "error", "rejected", "file_not_found", "permission_denied", "invalid_file")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    FILE_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    INVALID_FILE_FIELD_NUMBER: _ClassVar[int]
    success: ReadSuccess
    error: ReadError
    rejected: ReadRejected
    file_not_found: ReadFileNotFound
    permission_denied: ReadPermissionDenied
    invalid_file: ReadInvalidFile
    def __init__(self, success: _Optional[_Union[ReadSuccess, _Mapping]] = ..., error: _Optional[_Union[ReadError, _Mapping]] = ..., rejected: _Optional[_Union[ReadRejected, _Mapping]] = ..., file_not_found: _Optional[_Union[ReadFileNotFound, _Mapping]] = ..., permission_denied: _Optional[_Union[ReadPermissionDenied, _Mapping]] = ..., invalid_file: _Optional[_Union[ReadInvalidFile, _Mapping]] = ...) -> None: ...

class ReadSuccess(_message.Message):
    __slots__ = ("path", "total_lines", "file_size", "truncated", "range_applied", "content", "data")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RANGE_APPLIED_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    path: str
    total_lines: int
    file_size: int
    truncated: bool
    range_applied: bool
    content: str
    data: bytes
    def __init__(self, path: _Optional[str] = ..., total_lines: _Optional[int] = ..., file_size: _Optional[int] = ..., truncated: _Optional[bool] = ..., range_applied: _Optional[bool] = ..., content: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ReadError(_message.Message):
    __slots__ = ("path", "error")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ReadRejected(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReadFileNotFound(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class ReadPermissionDenied(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class ReadInvalidFile(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReadToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: ReadToolArgs
    result: ReadToolResult
    def __init__(self, args: _Optional[_Union[ReadToolArgs, _Mapping]] = ..., result: _Optional[_Union[ReadToolResult, _Mapping]] = ...) -> None: ...

class ReadToolArgs(_message.Message):
    __slots__ = ("path", "offset", "limit")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    path: str
    offset: int
    limit: int
    def __init__(self, path: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ReadToolResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: ReadToolSuccess
    error: ReadToolError
    def __init__(self, success: _Optional[_Union[ReadToolSuccess, _Mapping]] = ..., error: _Optional[_Union[ReadToolError, _Mapping]] = ...) -> None: ...

class ReadToolSuccess(_message.Message):
    __slots__ = ("is_empty", "exceeded_limit", "total_lines", "file_size", "path", "read_range", "content", "data")
    IS_EMPTY_FIELD_NUMBER: _ClassVar[int]
    EXCEEDED_LIMIT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    READ_RANGE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    is_empty: bool
    exceeded_limit: bool
    total_lines: int
    file_size: int
    path: str
    read_range: ReadRange
    content: str
    data: bytes
    def __init__(self, is_empty: _Optional[bool] = ..., exceeded_limit: _Optional[bool] = ..., total_lines: _Optional[int] = ..., file_size: _Optional[int] = ..., path: _Optional[str] = ..., read_range: _Optional[_Union[ReadRange, _Mapping]] = ..., content: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ReadToolError(_message.Message):
    __slots__ = ("error_message",)
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    def __init__(self, error_message: _Optional[str] = ...) -> None: ...

class ReadRange(_message.Message):
    __slots__ = ("start_line", "end_line")
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    start_line: int
    end_line: int
    def __init__(self, start_line: _Optional[int] = ..., end_line: _Optional[int] = ...) -> None: ...

class WriteArgs(_message.Message):
    __slots__ = ("path", "file_text", "tool_call_id", "return_file_content_after_write", "file_bytes")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILE_TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RETURN_FILE_CONTENT_AFTER_WRITE_FIELD_NUMBER: _ClassVar[int]
    FILE_BYTES_FIELD_NUMBER: _ClassVar[int]
    path: str
    file_text: str
    tool_call_id: str
    return_file_content_after_write: bool
    file_bytes: bytes
    def __init__(self, path: _Optional[str] = ..., file_text: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., return_file_content_after_write: _Optional[bool] = ..., file_bytes: _Optional[bytes] = ...) -> None: ...

class WriteResult(_message.Message):
    __slots__ = ("success", "permission_denied", "no_space", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    NO_SPACE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    success: WriteSuccess
    permission_denied: WritePermissionDenied
    no_space: WriteNoSpace
    error: WriteError
    rejected: WriteRejected
    def __init__(self, success: _Optional[_Union[WriteSuccess, _Mapping]] = ..., permission_denied: _Optional[_Union[WritePermissionDenied, _Mapping]] = ..., no_space: _Optional[_Union[WriteNoSpace, _Mapping]] = ..., error: _Optional[_Union[WriteError, _Mapping]] = ..., rejected: _Optional[_Union[WriteRejected, _Mapping]] = ...) -> None: ...

class WriteSuccess(_message.Message):
    __slots__ = ("path", "lines_created", "file_size", "file_content_after_write")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LINES_CREATED_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    FILE_CONTENT_AFTER_WRITE_FIELD_NUMBER: _ClassVar[int]
    path: str
    lines_created: int
    file_size: int
    file_content_after_write: str
    def __init__(self, path: _Optional[str] = ..., lines_created: _Optional[int] = ..., file_size: _Optional[int] = ..., file_content_after_write: _Optional[str] = ...) -> None: ...

class WriteError(_message.Message):
    __slots__ = ("path", "error")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class WriteRejected(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class WritePermissionDenied(_message.Message):
    __slots__ = ("path", "directory", "operation", "error", "is_readonly")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    path: str
    directory: str
    operation: str
    error: str
    is_readonly: bool
    def __init__(self, path: _Optional[str] = ..., directory: _Optional[str] = ..., operation: _Optional[str] = ..., error: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class WriteNoSpace(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class EditToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: EditArgs
    result: EditResult
    def __init__(self, args: _Optional[_Union[EditArgs, _Mapping]] = ..., result: _Optional[_Union[EditResult, _Mapping]] = ...) -> None: ...

class EditArgs(_message.Message):
    __slots__ = ("path", "stream_content")
    PATH_FIELD_NUMBER: _ClassVar[int]
    STREAM_CONTENT_FIELD_NUMBER: _ClassVar[int]
    path: str
    stream_content: str
    def __init__(self, path: _Optional[str] = ..., stream_content: _Optional[str] = ...) -> None: ...

class EditResult(_message.Message):
    __slots__ = ("success", "file_not_found", "read_permission_denied", "write_permission_denied", "rejected", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FILE_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    READ_PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    WRITE_PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: EditSuccess
    file_not_found: EditFileNotFound
    read_permission_denied: EditReadPermissionDenied
    write_permission_denied: EditWritePermissionDenied
    rejected: EditRejected
    error: EditError
    def __init__(self, success: _Optional[_Union[EditSuccess, _Mapping]] = ..., file_not_found: _Optional[_Union[EditFileNotFound, _Mapping]] = ..., read_permission_denied: _Optional[_Union[EditReadPermissionDenied, _Mapping]] = ..., write_permission_denied: _Optional[_Union[EditWritePermissionDenied, _Mapping]] = ..., rejected: _Optional[_Union[EditRejected, _Mapping]] = ..., error: _Optional[_Union[EditError, _Mapping]] = ...) -> None: ...

class EditSuccess(_message.Message):
    __slots__ = ("path", "lines_added", "lines_removed", "diff_string", "before_full_file_content", "after_full_file_content", "message")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LINES_ADDED_FIELD_NUMBER: _ClassVar[int]
    LINES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    DIFF_STRING_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FULL_FILE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FULL_FILE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    path: str
    lines_added: int
    lines_removed: int
    diff_string: str
    before_full_file_content: str
    after_full_file_content: str
    message: str
    def __init__(self, path: _Optional[str] = ..., lines_added: _Optional[int] = ..., lines_removed: _Optional[int] = ..., diff_string: _Optional[str] = ..., before_full_file_content: _Optional[str] = ..., after_full_file_content: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class EditFileNotFound(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class EditReadPermissionDenied(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class EditWritePermissionDenied(_message.Message):
    __slots__ = ("path", "error", "is_readonly")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    is_readonly: bool
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class EditRejected(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class EditError(_message.Message):
    __slots__ = ("path", "error", "model_visible_error")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MODEL_VISIBLE_ERROR_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    model_visible_error: str
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ..., model_visible_error: _Optional[str] = ...) -> None: ...

class DeleteArgs(_message.Message):
    __slots__ = ("path", "tool_call_id")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    path: str
    tool_call_id: str
    def __init__(self, path: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class DeleteResult(_message.Message):
    __slots__ = ("success", "file_not_found", "not_file", "permission_denied", "file_busy", "rejected", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FILE_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    NOT_FILE_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    FILE_BUSY_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: DeleteSuccess
    file_not_found: DeleteFileNotFound
    not_file: DeleteNotFile
    permission_denied: DeletePermissionDenied
    file_busy: DeleteFileBusy
    rejected: DeleteRejected
    error: DeleteError
    def __init__(self, success: _Optional[_Union[DeleteSuccess, _Mapping]] = ..., file_not_found: _Optional[_Union[DeleteFileNotFound, _Mapping]] = ..., not_file: _Optional[_Union[DeleteNotFile, _Mapping]] = ..., permission_denied: _Optional[_Union[DeletePermissionDenied, _Mapping]] = ..., file_busy: _Optional[_Union[DeleteFileBusy, _Mapping]] = ..., rejected: _Optional[_Union[DeleteRejected, _Mapping]] = ..., error: _Optional[_Union[DeleteError, _Mapping]] = ...) -> None: ...

class DeleteSuccess(_message.Message):
    __slots__ = ("path", "deleted_file", "file_size", "prev_content")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DELETED_FILE_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PREV_CONTENT_FIELD_NUMBER: _ClassVar[int]
    path: str
    deleted_file: str
    file_size: int
    prev_content: str
    def __init__(self, path: _Optional[str] = ..., deleted_file: _Optional[str] = ..., file_size: _Optional[int] = ..., prev_content: _Optional[str] = ...) -> None: ...

class DeleteFileNotFound(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class DeleteNotFile(_message.Message):
    __slots__ = ("path", "actual_type")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_TYPE_FIELD_NUMBER: _ClassVar[int]
    path: str
    actual_type: str
    def __init__(self, path: _Optional[str] = ..., actual_type: _Optional[str] = ...) -> None: ...

class DeletePermissionDenied(_message.Message):
    __slots__ = ("path", "client_visible_error", "is_readonly")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CLIENT_VISIBLE_ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    path: str
    client_visible_error: str
    is_readonly: bool
    def __init__(self, path: _Optional[str] = ..., client_visible_error: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class DeleteFileBusy(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class DeleteRejected(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DeleteError(_message.Message):
    __slots__ = ("path", "error")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class DeleteToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: DeleteArgs
    result: DeleteResult
    def __init__(self, args: _Optional[_Union[DeleteArgs, _Mapping]] = ..., result: _Optional[_Union[DeleteResult, _Mapping]] = ...) -> None: ...

class GrepArgs(_message.Message):
    __slots__ = ("pattern", "path", "glob", "output_mode", "context_before", "context_after", "context", "case_insensitive", "type", "head_limit", "multiline", "tool_call_id", "offset")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    GLOB_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_AFTER_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CASE_INSENSITIVE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    HEAD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MULTILINE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    glob: str
    output_mode: str
    context_before: int
    context_after: int
    context: int
    case_insensitive: bool
    type: str
    head_limit: int
    multiline: bool
    tool_call_id: str
    offset: int
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., glob: _Optional[str] = ..., output_mode: _Optional[str] = ..., context_before: _Optional[int] = ..., context_after: _Optional[int] = ..., context: _Optional[int] = ..., case_insensitive: _Optional[bool] = ..., type: _Optional[str] = ..., head_limit: _Optional[int] = ..., multiline: _Optional[bool] = ..., tool_call_id: _Optional[str] = ..., offset: _Optional[int] = ...) -> None: ...

class GrepResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: GrepSuccess
    error: GrepError
    def __init__(self, success: _Optional[_Union[GrepSuccess, _Mapping]] = ..., error: _Optional[_Union[GrepError, _Mapping]] = ...) -> None: ...

class GrepSuccess(_message.Message):
    __slots__ = ("pattern", "path", "output_mode", "workspace_results", "active_editor_result")
    class WorkspaceResultsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: GrepUnionResult
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[GrepUnionResult, _Mapping]] = ...) -> None: ...
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_RESULTS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_EDITOR_RESULT_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    output_mode: str
    workspace_results: _containers.MessageMap[str, GrepUnionResult]
    active_editor_result: GrepUnionResult
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., output_mode: _Optional[str] = ..., workspace_results: _Optional[_Mapping[str, GrepUnionResult]] = ..., active_editor_result: _Optional[_Union[GrepUnionResult, _Mapping]] = ...) -> None: ...

class GrepError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class GrepUnionResult(_message.Message):
    __slots__ = ("count", "files", "content")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    count: GrepCountResult
    files: GrepFilesResult
    content: GrepContentResult
    def __init__(self, count: _Optional[_Union[GrepCountResult, _Mapping]] = ..., files: _Optional[_Union[GrepFilesResult, _Mapping]] = ..., content: _Optional[_Union[GrepContentResult, _Mapping]] = ...) -> None: ...

class GrepCountResult(_message.Message):
    __slots__ = ("counts", "total_files", "total_matches", "client_truncated", "ripgrep_truncated", "head_limit_applied", "offset_applied")
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MATCHES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    HEAD_LIMIT_APPLIED_FIELD_NUMBER: _ClassVar[int]
    OFFSET_APPLIED_FIELD_NUMBER: _ClassVar[int]
    counts: _containers.RepeatedCompositeFieldContainer[GrepFileCount]
    total_files: int
    total_matches: int
    client_truncated: bool
    ripgrep_truncated: bool
    head_limit_applied: int
    offset_applied: int
    def __init__(self, counts: _Optional[_Iterable[_Union[GrepFileCount, _Mapping]]] = ..., total_files: _Optional[int] = ..., total_matches: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ..., head_limit_applied: _Optional[int] = ..., offset_applied: _Optional[int] = ...) -> None: ...

class GrepFileCount(_message.Message):
    __slots__ = ("file", "count")
    FILE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    file: str
    count: int
    def __init__(self, file: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class GrepFilesResult(_message.Message):
    __slots__ = ("files", "total_files", "client_truncated", "ripgrep_truncated", "head_limit_applied", "offset_applied")
    FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FILES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    HEAD_LIMIT_APPLIED_FIELD_NUMBER: _ClassVar[int]
    OFFSET_APPLIED_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedScalarFieldContainer[str]
    total_files: int
    client_truncated: bool
    ripgrep_truncated: bool
    head_limit_applied: int
    offset_applied: int
    def __init__(self, files: _Optional[_Iterable[str]] = ..., total_files: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ..., head_limit_applied: _Optional[int] = ..., offset_applied: _Optional[int] = ...) -> None: ...

class GrepContentResult(_message.Message):
    __slots__ = ("matches", "total_lines", "total_matched_lines", "client_truncated", "ripgrep_truncated", "head_limit_applied", "offset_applied")
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MATCHED_LINES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    HEAD_LIMIT_APPLIED_FIELD_NUMBER: _ClassVar[int]
    OFFSET_APPLIED_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[GrepFileMatch]
    total_lines: int
    total_matched_lines: int
    client_truncated: bool
    ripgrep_truncated: bool
    head_limit_applied: int
    offset_applied: int
    def __init__(self, matches: _Optional[_Iterable[_Union[GrepFileMatch, _Mapping]]] = ..., total_lines: _Optional[int] = ..., total_matched_lines: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ..., head_limit_applied: _Optional[int] = ..., offset_applied: _Optional[int] = ...) -> None: ...

class GrepFileMatch(_message.Message):
    __slots__ = ("file", "matches")
    FILE_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    file: str
    matches: _containers.RepeatedCompositeFieldContainer[GrepContentMatch]
    def __init__(self, file: _Optional[str] = ..., matches: _Optional[_Iterable[_Union[GrepContentMatch, _Mapping]]] = ...) -> None: ...

class GrepContentMatch(_message.Message):
    __slots__ = ("line_number", "content", "content_truncated", "is_context_line")
    LINE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    IS_CONTEXT_LINE_FIELD_NUMBER: _ClassVar[int]
    line_number: int
    content: str
    content_truncated: bool
    is_context_line: bool
    def __init__(self, line_number: _Optional[int] = ..., content: _Optional[str] = ..., content_truncated: _Optional[bool] = ..., is_context_line: _Optional[bool] = ...) -> None: ...

class GrepToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: GrepArgs
    result: GrepResult
    def __init__(self, args: _Optional[_Union[GrepArgs, _Mapping]] = ..., result: _Optional[_Union[GrepResult, _Mapping]] = ...) -> None: ...

class GlobToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: GlobToolArgs
    result: GlobToolResult
    def __init__(self, args: _Optional[_Union[GlobToolArgs, _Mapping]] = ..., result: _Optional[_Union[GlobToolResult, _Mapping]] = ...) -> None: ...

class GlobToolArgs(_message.Message):
    __slots__ = ("target_directory", "glob_pattern")
    TARGET_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    GLOB_PATTERN_FIELD_NUMBER: _ClassVar[int]
    target_directory: str
    glob_pattern: str
    def __init__(self, target_directory: _Optional[str] = ..., glob_pattern: _Optional[str] = ...) -> None: ...

class GlobToolResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: GlobToolSuccess
    error: GlobToolError
    def __init__(self, success: _Optional[_Union[GlobToolSuccess, _Mapping]] = ..., error: _Optional[_Union[GlobToolError, _Mapping]] = ...) -> None: ...

class GlobToolSuccess(_message.Message):
    __slots__ = ("pattern", "path", "files", "total_files", "client_truncated", "ripgrep_truncated")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FILES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    files: _containers.RepeatedScalarFieldContainer[str]
    total_files: int
    client_truncated: bool
    ripgrep_truncated: bool
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., files: _Optional[_Iterable[str]] = ..., total_files: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ...) -> None: ...

class GlobToolError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class DiagnosticsArgs(_message.Message):
    __slots__ = ("path", "tool_call_id")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    path: str
    tool_call_id: str
    def __init__(self, path: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class DiagnosticsResult(_message.Message):
    __slots__ = ("success", "error", "rejected", "file_not_found", "permission_denied")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    FILE_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    success: DiagnosticsSuccess
    error: DiagnosticsError
    rejected: DiagnosticsRejected
    file_not_found: DiagnosticsFileNotFound
    permission_denied: DiagnosticsPermissionDenied
    def __init__(self, success: _Optional[_Union[DiagnosticsSuccess, _Mapping]] = ..., error: _Optional[_Union[DiagnosticsError, _Mapping]] = ..., rejected: _Optional[_Union[DiagnosticsRejected, _Mapping]] = ..., file_not_found: _Optional[_Union[DiagnosticsFileNotFound, _Mapping]] = ..., permission_denied: _Optional[_Union[DiagnosticsPermissionDenied, _Mapping]] = ...) -> None: ...

class DiagnosticsSuccess(_message.Message):
    __slots__ = ("path", "diagnostics", "total_diagnostics")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    path: str
    diagnostics: _containers.RepeatedCompositeFieldContainer[Diagnostic]
    total_diagnostics: int
    def __init__(self, path: _Optional[str] = ..., diagnostics: _Optional[_Iterable[_Union[Diagnostic, _Mapping]]] = ..., total_diagnostics: _Optional[int] = ...) -> None: ...

class DiagnosticsError(_message.Message):
    __slots__ = ("path", "error")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class DiagnosticsRejected(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DiagnosticsFileNotFound(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class DiagnosticsPermissionDenied(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class Diagnostic(_message.Message):
    __slots__ = ("severity", "range", "message", "source", "code", "is_stale")
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    IS_STALE_FIELD_NUMBER: _ClassVar[int]
    severity: DiagnosticSeverity
    range: Range
    message: str
    source: str
    code: str
    is_stale: bool
    def __init__(self, severity: _Optional[_Union[DiagnosticSeverity, str]] = ..., range: _Optional[_Union[Range, _Mapping]] = ..., message: _Optional[str] = ..., source: _Optional[str] = ..., code: _Optional[str] = ..., is_stale: _Optional[bool] = ...) -> None: ...

class Range(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: Position
    end: Position
    def __init__(self, start: _Optional[_Union[Position, _Mapping]] = ..., end: _Optional[_Union[Position, _Mapping]] = ...) -> None: ...

class Position(_message.Message):
    __slots__ = ("line", "column")
    LINE_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    line: int
    column: int
    def __init__(self, line: _Optional[int] = ..., column: _Optional[int] = ...) -> None: ...

class ReadLintsToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: ReadLintsToolArgs
    result: ReadLintsToolResult
    def __init__(self, args: _Optional[_Union[ReadLintsToolArgs, _Mapping]] = ..., result: _Optional[_Union[ReadLintsToolResult, _Mapping]] = ...) -> None: ...

class ReadLintsToolArgs(_message.Message):
    __slots__ = ("paths",)
    PATHS_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, paths: _Optional[_Iterable[str]] = ...) -> None: ...

class ReadLintsToolResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: ReadLintsToolSuccess
    error: ReadLintsToolError
    def __init__(self, success: _Optional[_Union[ReadLintsToolSuccess, _Mapping]] = ..., error: _Optional[_Union[ReadLintsToolError, _Mapping]] = ...) -> None: ...

class ReadLintsToolSuccess(_message.Message):
    __slots__ = ("file_diagnostics", "total_files", "total_diagnostics")
    FILE_DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    file_diagnostics: _containers.RepeatedCompositeFieldContainer[FileDiagnostics]
    total_files: int
    total_diagnostics: int
    def __init__(self, file_diagnostics: _Optional[_Iterable[_Union[FileDiagnostics, _Mapping]]] = ..., total_files: _Optional[int] = ..., total_diagnostics: _Optional[int] = ...) -> None: ...

class ReadLintsToolError(_message.Message):
    __slots__ = ("error_message",)
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    def __init__(self, error_message: _Optional[str] = ...) -> None: ...

class FileDiagnostics(_message.Message):
    __slots__ = ("path", "diagnostics", "diagnostics_count")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_COUNT_FIELD_NUMBER: _ClassVar[int]
    path: str
    diagnostics: _containers.RepeatedCompositeFieldContainer[DiagnosticItem]
    diagnostics_count: int
    def __init__(self, path: _Optional[str] = ..., diagnostics: _Optional[_Iterable[_Union[DiagnosticItem, _Mapping]]] = ..., diagnostics_count: _Optional[int] = ...) -> None: ...

class DiagnosticItem(_message.Message):
    __slots__ = ("severity", "range", "message", "source", "code", "is_stale")
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    IS_STALE_FIELD_NUMBER: _ClassVar[int]
    severity: DiagnosticSeverity
    range: DiagnosticRange
    message: str
    source: str
    code: str
    is_stale: bool
    def __init__(self, severity: _Optional[_Union[DiagnosticSeverity, str]] = ..., range: _Optional[_Union[DiagnosticRange, _Mapping]] = ..., message: _Optional[str] = ..., source: _Optional[str] = ..., code: _Optional[str] = ..., is_stale: _Optional[bool] = ...) -> None: ...

class DiagnosticRange(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: Position
    end: Position
    def __init__(self, start: _Optional[_Union[Position, _Mapping]] = ..., end: _Optional[_Union[Position, _Mapping]] = ...) -> None: ...

class UpdateTodosToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: UpdateTodosArgs
    result: UpdateTodosResult
    def __init__(self, args: _Optional[_Union[UpdateTodosArgs, _Mapping]] = ..., result: _Optional[_Union[UpdateTodosResult, _Mapping]] = ...) -> None: ...

class UpdateTodosArgs(_message.Message):
    __slots__ = ("todos", "merge")
    TODOS_FIELD_NUMBER: _ClassVar[int]
    MERGE_FIELD_NUMBER: _ClassVar[int]
    todos: _containers.RepeatedCompositeFieldContainer[TodoItem]
    merge: bool
    def __init__(self, todos: _Optional[_Iterable[_Union[TodoItem, _Mapping]]] = ..., merge: _Optional[bool] = ...) -> None: ...

class UpdateTodosResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: UpdateTodosSuccess
    error: UpdateTodosError
    def __init__(self, success: _Optional[_Union[UpdateTodosSuccess, _Mapping]] = ..., error: _Optional[_Union[UpdateTodosError, _Mapping]] = ...) -> None: ...

class UpdateTodosSuccess(_message.Message):
    __slots__ = ("todos", "total_count", "was_merge")
    TODOS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    WAS_MERGE_FIELD_NUMBER: _ClassVar[int]
    todos: _containers.RepeatedCompositeFieldContainer[TodoItem]
    total_count: int
    was_merge: bool
    def __init__(self, todos: _Optional[_Iterable[_Union[TodoItem, _Mapping]]] = ..., total_count: _Optional[int] = ..., was_merge: _Optional[bool] = ...) -> None: ...

class UpdateTodosError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class GenerateImageRequestQuery(_message.Message):
    __slots__ = ("args", "tool_call_id")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    args: GenerateImageArgs
    tool_call_id: str
    def __init__(self, args: _Optional[_Union[GenerateImageArgs, _Mapping]] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class GenerateImageRequestResponse(_message.Message):
    __slots__ = ("approved", "rejected")
    class Approved(_message.Message):
        __slots__ = ("description",)
        DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
        description: str
        def __init__(self, description: _Optional[str] = ...) -> None: ...
    class Rejected(_message.Message):
        __slots__ = ("reason",)
        REASON_FIELD_NUMBER: _ClassVar[int]
        reason: str
        def __init__(self, reason: _Optional[str] = ...) -> None: ...
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    approved: GenerateImageRequestResponse.Approved
    rejected: GenerateImageRequestResponse.Rejected
    def __init__(self, approved: _Optional[_Union[GenerateImageRequestResponse.Approved, _Mapping]] = ..., rejected: _Optional[_Union[GenerateImageRequestResponse.Rejected, _Mapping]] = ...) -> None: ...

class GenerateImageArgs(_message.Message):
    __slots__ = ("description", "file_path", "reference_image_paths", "aspect_ratio")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FILE_PATH_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_IMAGE_PATHS_FIELD_NUMBER: _ClassVar[int]
    ASPECT_RATIO_FIELD_NUMBER: _ClassVar[int]
    description: str
    file_path: str
    reference_image_paths: _containers.RepeatedScalarFieldContainer[str]
    aspect_ratio: str
    def __init__(self, description: _Optional[str] = ..., file_path: _Optional[str] = ..., reference_image_paths: _Optional[_Iterable[str]] = ..., aspect_ratio: _Optional[str] = ...) -> None: ...

class GenerateImageResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: GenerateImageSuccess
    error: GenerateImageError
    def __init__(self, success: _Optional[_Union[GenerateImageSuccess, _Mapping]] = ..., error: _Optional[_Union[GenerateImageError, _Mapping]] = ...) -> None: ...

class GenerateImageSuccess(_message.Message):
    __slots__ = ("file_path", "image_data")
    FILE_PATH_FIELD_NUMBER: _ClassVar[int]
    IMAGE_DATA_FIELD_NUMBER: _ClassVar[int]
    file_path: str
    image_data: str
    def __init__(self, file_path: _Optional[str] = ..., image_data: _Optional[str] = ...) -> None: ...

class GenerateImageError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class GenerateImageToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: GenerateImageArgs
    result: GenerateImageResult
    def __init__(self, args: _Optional[_Union[GenerateImageArgs, _Mapping]] = ..., result: _Optional[_Union[GenerateImageResult, _Mapping]] = ...) -> None: ...

class AwaitToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: AwaitArgs
    result: AwaitResult
    def __init__(self, args: _Optional[_Union[AwaitArgs, _Mapping]] = ..., result: _Optional[_Union[AwaitResult, _Mapping]] = ...) -> None: ...

class AwaitArgs(_message.Message):
    __slots__ = ("task_id", "block_until_ms", "regex")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCK_UNTIL_MS_FIELD_NUMBER: _ClassVar[int]
    REGEX_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    block_until_ms: int
    regex: str
    def __init__(self, task_id: _Optional[str] = ..., block_until_ms: _Optional[int] = ..., regex: _Optional[str] = ...) -> None: ...

class AwaitResult(_message.Message):
    __slots__ = ("error", "success")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    error: AwaitError
    success: AwaitSuccess
    def __init__(self, error: _Optional[_Union[AwaitError, _Mapping]] = ..., success: _Optional[_Union[AwaitSuccess, _Mapping]] = ...) -> None: ...

class AwaitError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class AwaitSuccess(_message.Message):
    __slots__ = ("complete", "still_running")
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    STILL_RUNNING_FIELD_NUMBER: _ClassVar[int]
    complete: AwaitTaskComplete
    still_running: AwaitTaskStillRunning
    def __init__(self, complete: _Optional[_Union[AwaitTaskComplete, _Mapping]] = ..., still_running: _Optional[_Union[AwaitTaskStillRunning, _Mapping]] = ...) -> None: ...

class AwaitTaskComplete(_message.Message):
    __slots__ = ("task_id", "runtime_ms", "output_file_path", "output_length", "regex_requested", "regex_match", "exit_code", "wake_reason")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_MS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FILE_PATH_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    REGEX_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    REGEX_MATCH_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    WAKE_REASON_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    runtime_ms: int
    output_file_path: str
    output_length: int
    regex_requested: bool
    regex_match: str
    exit_code: int
    wake_reason: str
    def __init__(self, task_id: _Optional[str] = ..., runtime_ms: _Optional[int] = ..., output_file_path: _Optional[str] = ..., output_length: _Optional[int] = ..., regex_requested: _Optional[bool] = ..., regex_match: _Optional[str] = ..., exit_code: _Optional[int] = ..., wake_reason: _Optional[str] = ...) -> None: ...

class AwaitTaskStillRunning(_message.Message):
    __slots__ = ("task_id", "runtime_ms", "output_file_path", "output_length", "regex_requested", "regex_match", "wake_reason")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_MS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FILE_PATH_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    REGEX_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    REGEX_MATCH_FIELD_NUMBER: _ClassVar[int]
    WAKE_REASON_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    runtime_ms: int
    output_file_path: str
    output_length: int
    regex_requested: bool
    regex_match: str
    wake_reason: str
    def __init__(self, task_id: _Optional[str] = ..., runtime_ms: _Optional[int] = ..., output_file_path: _Optional[str] = ..., output_length: _Optional[int] = ..., regex_requested: _Optional[bool] = ..., regex_match: _Optional[str] = ..., wake_reason: _Optional[str] = ...) -> None: ...

class WebFetchRequestQuery(_message.Message):
    __slots__ = ("args",)
    ARGS_FIELD_NUMBER: _ClassVar[int]
    args: WebFetchArgs
    def __init__(self, args: _Optional[_Union[WebFetchArgs, _Mapping]] = ...) -> None: ...

class WebFetchArgs(_message.Message):
    __slots__ = ("url", "tool_call_id")
    URL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    url: str
    tool_call_id: str
    def __init__(self, url: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class WebFetchRequestResponse(_message.Message):
    __slots__ = ("approved", "rejected")
    class Approved(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class Rejected(_message.Message):
        __slots__ = ("reason",)
        REASON_FIELD_NUMBER: _ClassVar[int]
        reason: str
        def __init__(self, reason: _Optional[str] = ...) -> None: ...
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    approved: WebFetchRequestResponse.Approved
    rejected: WebFetchRequestResponse.Rejected
    def __init__(self, approved: _Optional[_Union[WebFetchRequestResponse.Approved, _Mapping]] = ..., rejected: _Optional[_Union[WebFetchRequestResponse.Rejected, _Mapping]] = ...) -> None: ...

class FetchArgs(_message.Message):
    __slots__ = ("url", "tool_call_id")
    URL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    url: str
    tool_call_id: str
    def __init__(self, url: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class FetchResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: FetchSuccess
    error: FetchError
    def __init__(self, success: _Optional[_Union[FetchSuccess, _Mapping]] = ..., error: _Optional[_Union[FetchError, _Mapping]] = ...) -> None: ...

class FetchSuccess(_message.Message):
    __slots__ = ("url", "content", "status_code", "content_type")
    URL_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    url: str
    content: str
    status_code: int
    content_type: str
    def __init__(self, url: _Optional[str] = ..., content: _Optional[str] = ..., status_code: _Optional[int] = ..., content_type: _Optional[str] = ...) -> None: ...

class FetchError(_message.Message):
    __slots__ = ("url", "error")
    URL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    url: str
    error: str
    def __init__(self, url: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class WebFetchToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: WebFetchArgs
    result: WebFetchResult
    def __init__(self, args: _Optional[_Union[WebFetchArgs, _Mapping]] = ..., result: _Optional[_Union[WebFetchResult, _Mapping]] = ...) -> None: ...

class WebFetchResult(_message.Message):
    __slots__ = ("success", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    success: WebFetchSuccess
    error: WebFetchError
    rejected: WebFetchRejected
    def __init__(self, success: _Optional[_Union[WebFetchSuccess, _Mapping]] = ..., error: _Optional[_Union[WebFetchError, _Mapping]] = ..., rejected: _Optional[_Union[WebFetchRejected, _Mapping]] = ...) -> None: ...

class WebFetchSuccess(_message.Message):
    __slots__ = ("url", "markdown")
    URL_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    url: str
    markdown: str
    def __init__(self, url: _Optional[str] = ..., markdown: _Optional[str] = ...) -> None: ...

class WebFetchError(_message.Message):
    __slots__ = ("url", "error")
    URL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    url: str
    error: str
    def __init__(self, url: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class WebFetchRejected(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class WebSearchRequestQuery(_message.Message):
    __slots__ = ("args",)
    ARGS_FIELD_NUMBER: _ClassVar[int]
    args: WebSearchArgs
    def __init__(self, args: _Optional[_Union[WebSearchArgs, _Mapping]] = ...) -> None: ...

class WebSearchArgs(_message.Message):
    __slots__ = ("search_term", "tool_call_id")
    SEARCH_TERM_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    search_term: str
    tool_call_id: str
    def __init__(self, search_term: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class WebSearchRequestResponse(_message.Message):
    __slots__ = ("approved", "rejected")
    class Approved(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class Rejected(_message.Message):
        __slots__ = ("reason",)
        REASON_FIELD_NUMBER: _ClassVar[int]
        reason: str
        def __init__(self, reason: _Optional[str] = ...) -> None: ...
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    approved: WebSearchRequestResponse.Approved
    rejected: WebSearchRequestResponse.Rejected
    def __init__(self, approved: _Optional[_Union[WebSearchRequestResponse.Approved, _Mapping]] = ..., rejected: _Optional[_Union[WebSearchRequestResponse.Rejected, _Mapping]] = ...) -> None: ...

class WebSearchToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: WebSearchArgs
    result: WebSearchResult
    def __init__(self, args: _Optional[_Union[WebSearchArgs, _Mapping]] = ..., result: _Optional[_Union[WebSearchResult, _Mapping]] = ...) -> None: ...

class WebSearchResult(_message.Message):
    __slots__ = ("success", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    success: WebSearchSuccess
    error: WebSearchError
    rejected: WebSearchRejected
    def __init__(self, success: _Optional[_Union[WebSearchSuccess, _Mapping]] = ..., error: _Optional[_Union[WebSearchError, _Mapping]] = ..., rejected: _Optional[_Union[WebSearchRejected, _Mapping]] = ...) -> None: ...

class WebSearchSuccess(_message.Message):
    __slots__ = ("references",)
    REFERENCES_FIELD_NUMBER: _ClassVar[int]
    references: _containers.RepeatedCompositeFieldContainer[WebSearchReference]
    def __init__(self, references: _Optional[_Iterable[_Union[WebSearchReference, _Mapping]]] = ...) -> None: ...

class WebSearchReference(_message.Message):
    __slots__ = ("title", "url", "chunk")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    title: str
    url: str
    chunk: str
    def __init__(self, title: _Optional[str] = ..., url: _Optional[str] = ..., chunk: _Optional[str] = ...) -> None: ...

class WebSearchError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class WebSearchRejected(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class GetUsableModelsResponse(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelDetails]
    def __init__(self, models: _Optional[_Iterable[_Union[ModelDetails, _Mapping]]] = ...) -> None: ...

class SubagentModelOverride(_message.Message):
    __slots__ = ("subagent_type", "model", "inherit", "disabled")
    SUBAGENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INHERIT_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    subagent_type: str
    model: RequestedModel
    inherit: bool
    disabled: bool
    def __init__(self, subagent_type: _Optional[str] = ..., model: _Optional[_Union[RequestedModel, _Mapping]] = ..., inherit: _Optional[bool] = ..., disabled: _Optional[bool] = ...) -> None: ...

class SubagentArgs(_message.Message):
    __slots__ = ("tool_call_id", "subagent_type", "model_id", "prompt", "readonly", "resume_agent_id", "run_in_background", "parent_conversation_id", "interrupt", "mode", "root_parent_conversation_id", "selected_context", "environment", "cloud_base_branch")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    READONLY_FIELD_NUMBER: _ClassVar[int]
    RESUME_AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_IN_BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    PARENT_CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    INTERRUPT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    ROOT_PARENT_CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    SELECTED_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    CLOUD_BASE_BRANCH_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    subagent_type: str
    model_id: str
    prompt: str
    readonly: bool
    resume_agent_id: str
    run_in_background: bool
    parent_conversation_id: str
    interrupt: bool
    mode: TaskMode
    root_parent_conversation_id: str
    selected_context: SelectedContext
    environment: SubagentExecutionEnvironment
    cloud_base_branch: str
    def __init__(self, tool_call_id: _Optional[str] = ..., subagent_type: _Optional[str] = ..., model_id: _Optional[str] = ..., prompt: _Optional[str] = ..., readonly: _Optional[bool] = ..., resume_agent_id: _Optional[str] = ..., run_in_background: _Optional[bool] = ..., parent_conversation_id: _Optional[str] = ..., interrupt: _Optional[bool] = ..., mode: _Optional[_Union[TaskMode, str]] = ..., root_parent_conversation_id: _Optional[str] = ..., selected_context: _Optional[_Union[SelectedContext, _Mapping]] = ..., environment: _Optional[_Union[SubagentExecutionEnvironment, str]] = ..., cloud_base_branch: _Optional[str] = ...) -> None: ...

class SubagentResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: SubagentSuccess
    error: SubagentError
    def __init__(self, success: _Optional[_Union[SubagentSuccess, _Mapping]] = ..., error: _Optional[_Union[SubagentError, _Mapping]] = ...) -> None: ...

class SubagentSuccess(_message.Message):
    __slots__ = ("agent_id", "final_message", "tool_call_count", "background_reason", "transcript_path")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    FINAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_COUNT_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_REASON_FIELD_NUMBER: _ClassVar[int]
    TRANSCRIPT_PATH_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    final_message: str
    tool_call_count: int
    background_reason: SubagentBackgroundReason
    transcript_path: str
    def __init__(self, agent_id: _Optional[str] = ..., final_message: _Optional[str] = ..., tool_call_count: _Optional[int] = ..., background_reason: _Optional[_Union[SubagentBackgroundReason, str]] = ..., transcript_path: _Optional[str] = ...) -> None: ...

class SubagentError(_message.Message):
    __slots__ = ("agent_id", "error")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    error: str
    def __init__(self, agent_id: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class SubagentType(_message.Message):
    __slots__ = ("unspecified", "computer_use", "custom", "explore", "media_review", "bash", "browser_use", "shell", "vm_setup_helper", "debug", "cursor_guide", "watch_video")
    UNSPECIFIED_FIELD_NUMBER: _ClassVar[int]
    COMPUTER_USE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    EXPLORE_FIELD_NUMBER: _ClassVar[int]
    MEDIA_REVIEW_FIELD_NUMBER: _ClassVar[int]
    BASH_FIELD_NUMBER: _ClassVar[int]
    BROWSER_USE_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    VM_SETUP_HELPER_FIELD_NUMBER: _ClassVar[int]
    DEBUG_FIELD_NUMBER: _ClassVar[int]
    CURSOR_GUIDE_FIELD_NUMBER: _ClassVar[int]
    WATCH_VIDEO_FIELD_NUMBER: _ClassVar[int]
    unspecified: SubagentTypeUnspecified
    computer_use: SubagentTypeComputerUse
    custom: SubagentTypeCustom
    explore: SubagentTypeExplore
    media_review: SubagentTypeMediaReview
    bash: SubagentTypeBash
    browser_use: SubagentTypeBrowserUse
    shell: SubagentTypeShell
    vm_setup_helper: SubagentTypeVmSetupHelper
    debug: SubagentTypeDebug
    cursor_guide: SubagentTypeCursorGuide
    watch_video: SubagentTypeWatchVideo
    def __init__(self, unspecified: _Optional[_Union[SubagentTypeUnspecified, _Mapping]] = ..., computer_use: _Optional[_Union[SubagentTypeComputerUse, _Mapping]] = ..., custom: _Optional[_Union[SubagentTypeCustom, _Mapping]] = ..., explore: _Optional[_Union[SubagentTypeExplore, _Mapping]] = ..., media_review: _Optional[_Union[SubagentTypeMediaReview, _Mapping]] = ..., bash: _Optional[_Union[SubagentTypeBash, _Mapping]] = ..., browser_use: _Optional[_Union[SubagentTypeBrowserUse, _Mapping]] = ..., shell: _Optional[_Union[SubagentTypeShell, _Mapping]] = ..., vm_setup_helper: _Optional[_Union[SubagentTypeVmSetupHelper, _Mapping]] = ..., debug: _Optional[_Union[SubagentTypeDebug, _Mapping]] = ..., cursor_guide: _Optional[_Union[SubagentTypeCursorGuide, _Mapping]] = ..., watch_video: _Optional[_Union[SubagentTypeWatchVideo, _Mapping]] = ...) -> None: ...

class SubagentTypeUnspecified(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeComputerUse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeCustom(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class SubagentTypeExplore(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeMediaReview(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeBash(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeBrowserUse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeShell(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeVmSetupHelper(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeDebug(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeCursorGuide(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubagentTypeWatchVideo(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TaskToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: TaskArgs
    result: TaskResult
    def __init__(self, args: _Optional[_Union[TaskArgs, _Mapping]] = ..., result: _Optional[_Union[TaskResult, _Mapping]] = ...) -> None: ...

class TaskArgs(_message.Message):
    __slots__ = ("description", "prompt", "subagent_type", "model", "resume", "agent_id", "attachments", "mode", "responding_to_message_ids", "environment")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    RESPONDING_TO_MESSAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    description: str
    prompt: str
    subagent_type: SubagentType
    model: str
    resume: str
    agent_id: str
    attachments: _containers.RepeatedScalarFieldContainer[str]
    mode: TaskMode
    responding_to_message_ids: _containers.RepeatedScalarFieldContainer[str]
    environment: SubagentExecutionEnvironment
    def __init__(self, description: _Optional[str] = ..., prompt: _Optional[str] = ..., subagent_type: _Optional[_Union[SubagentType, _Mapping]] = ..., model: _Optional[str] = ..., resume: _Optional[str] = ..., agent_id: _Optional[str] = ..., attachments: _Optional[_Iterable[str]] = ..., mode: _Optional[_Union[TaskMode, str]] = ..., responding_to_message_ids: _Optional[_Iterable[str]] = ..., environment: _Optional[_Union[SubagentExecutionEnvironment, str]] = ...) -> None: ...

class TaskResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: TaskSuccess
    error: TaskError
    def __init__(self, success: _Optional[_Union[TaskSuccess, _Mapping]] = ..., error: _Optional[_Union[TaskError, _Mapping]] = ...) -> None: ...

class TaskSuccess(_message.Message):
    __slots__ = ("agent_id", "is_background", "duration_ms", "result_suffix", "background_reason", "transcript_path")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    IS_BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    RESULT_SUFFIX_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_REASON_FIELD_NUMBER: _ClassVar[int]
    TRANSCRIPT_PATH_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    is_background: bool
    duration_ms: int
    result_suffix: str
    background_reason: SubagentBackgroundReason
    transcript_path: str
    def __init__(self, agent_id: _Optional[str] = ..., is_background: _Optional[bool] = ..., duration_ms: _Optional[int] = ..., result_suffix: _Optional[str] = ..., background_reason: _Optional[_Union[SubagentBackgroundReason, str]] = ..., transcript_path: _Optional[str] = ...) -> None: ...

class TaskError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class CommunicateUpdateToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: CommunicateUpdateArgs
    result: CommunicateUpdateResult
    def __init__(self, args: _Optional[_Union[CommunicateUpdateArgs, _Mapping]] = ..., result: _Optional[_Union[CommunicateUpdateResult, _Mapping]] = ...) -> None: ...

class CommunicateUpdateArgs(_message.Message):
    __slots__ = ("current_step", "final_summary", "completed_subtitle")
    CURRENT_STEP_FIELD_NUMBER: _ClassVar[int]
    FINAL_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_SUBTITLE_FIELD_NUMBER: _ClassVar[int]
    current_step: str
    final_summary: str
    completed_subtitle: str
    def __init__(self, current_step: _Optional[str] = ..., final_summary: _Optional[str] = ..., completed_subtitle: _Optional[str] = ...) -> None: ...

class CommunicateUpdateResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: CommunicateUpdateSuccess
    error: CommunicateUpdateError
    def __init__(self, success: _Optional[_Union[CommunicateUpdateSuccess, _Mapping]] = ..., error: _Optional[_Union[CommunicateUpdateError, _Mapping]] = ...) -> None: ...

class CommunicateUpdateSuccess(_message.Message):
    __slots__ = ("current_step", "message_index")
    CURRENT_STEP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    current_step: str
    message_index: int
    def __init__(self, current_step: _Optional[str] = ..., message_index: _Optional[int] = ...) -> None: ...

class CommunicateUpdateError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class BackgroundTaskCompletionAction(_message.Message):
    __slots__ = ("completions",)
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    completions: _containers.RepeatedCompositeFieldContainer[BackgroundTaskCompletion]
    def __init__(self, completions: _Optional[_Iterable[_Union[BackgroundTaskCompletion, _Mapping]]] = ...) -> None: ...

class BackgroundTaskCompletion(_message.Message):
    __slots__ = ("task_id", "kind", "status", "title", "detail", "output_path", "thread_id", "reason", "subagent_id", "tool_call_id")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PATH_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    kind: BackgroundTaskKind
    status: BackgroundTaskStatus
    title: str
    detail: str
    output_path: str
    thread_id: str
    reason: BackgroundTaskCompletionReason
    subagent_id: str
    tool_call_id: str
    def __init__(self, task_id: _Optional[str] = ..., kind: _Optional[_Union[BackgroundTaskKind, str]] = ..., status: _Optional[_Union[BackgroundTaskStatus, str]] = ..., title: _Optional[str] = ..., detail: _Optional[str] = ..., output_path: _Optional[str] = ..., thread_id: _Optional[str] = ..., reason: _Optional[_Union[BackgroundTaskCompletionReason, str]] = ..., subagent_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class McpTools(_message.Message):
    __slots__ = ("mcp_tools",)
    MCP_TOOLS_FIELD_NUMBER: _ClassVar[int]
    mcp_tools: _containers.RepeatedCompositeFieldContainer[McpToolDefinition]
    def __init__(self, mcp_tools: _Optional[_Iterable[_Union[McpToolDefinition, _Mapping]]] = ...) -> None: ...

class McpToolDefinition(_message.Message):
    __slots__ = ("name", "provider_identifier", "tool_name", "description", "input_schema", "input_schema_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    provider_identifier: str
    tool_name: str
    description: str
    input_schema: _struct_pb2.Value
    input_schema_json: str
    def __init__(self, name: _Optional[str] = ..., provider_identifier: _Optional[str] = ..., tool_name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., input_schema_json: _Optional[str] = ...) -> None: ...

class McpStateExecArgs(_message.Message):
    __slots__ = ("server_identifiers", "kick_only")
    SERVER_IDENTIFIERS_FIELD_NUMBER: _ClassVar[int]
    KICK_ONLY_FIELD_NUMBER: _ClassVar[int]
    server_identifiers: _containers.RepeatedScalarFieldContainer[str]
    kick_only: bool
    def __init__(self, server_identifiers: _Optional[_Iterable[str]] = ..., kick_only: _Optional[bool] = ...) -> None: ...

class McpStateExecResult(_message.Message):
    __slots__ = ("success", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    success: McpStateSuccess
    error: McpStateError
    rejected: McpStateRejected
    def __init__(self, success: _Optional[_Union[McpStateSuccess, _Mapping]] = ..., error: _Optional[_Union[McpStateError, _Mapping]] = ..., rejected: _Optional[_Union[McpStateRejected, _Mapping]] = ...) -> None: ...

class McpStateSuccess(_message.Message):
    __slots__ = ("servers",)
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[McpStateServer]
    def __init__(self, servers: _Optional[_Iterable[_Union[McpStateServer, _Mapping]]] = ...) -> None: ...

class McpStateServer(_message.Message):
    __slots__ = ("server_name", "server_identifier", "tools", "status", "error_message")
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    server_name: str
    server_identifier: str
    tools: _containers.RepeatedCompositeFieldContainer[McpToolDefinition]
    status: str
    error_message: str
    def __init__(self, server_name: _Optional[str] = ..., server_identifier: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[McpToolDefinition, _Mapping]]] = ..., status: _Optional[str] = ..., error_message: _Optional[str] = ...) -> None: ...

class McpStateError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class McpStateRejected(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class GetMcpToolsToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: GetMcpToolsArgs
    result: GetMcpToolsAgentResult
    def __init__(self, args: _Optional[_Union[GetMcpToolsArgs, _Mapping]] = ..., result: _Optional[_Union[GetMcpToolsAgentResult, _Mapping]] = ...) -> None: ...

class GetMcpToolsArgs(_message.Message):
    __slots__ = ("server", "tool_name", "pattern", "tool_call_id")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    server: str
    tool_name: str
    pattern: str
    tool_call_id: str
    def __init__(self, server: _Optional[str] = ..., tool_name: _Optional[str] = ..., pattern: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class GetMcpToolsAgentResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: GetMcpToolsSuccess
    error: GetMcpToolsError
    def __init__(self, success: _Optional[_Union[GetMcpToolsSuccess, _Mapping]] = ..., error: _Optional[_Union[GetMcpToolsError, _Mapping]] = ...) -> None: ...

class GetMcpToolsSuccess(_message.Message):
    __slots__ = ("content",)
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: str
    def __init__(self, content: _Optional[str] = ...) -> None: ...

class GetMcpToolsError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class McpArgs(_message.Message):
    __slots__ = ("name", "args", "tool_call_id", "provider_identifier", "tool_name", "smart_mode_approval", "server_identifier")
    class ArgsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    SMART_MODE_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    SERVER_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    name: str
    args: _containers.MessageMap[str, _struct_pb2.Value]
    tool_call_id: str
    provider_identifier: str
    tool_name: str
    smart_mode_approval: SmartModeApproval
    server_identifier: str
    def __init__(self, name: _Optional[str] = ..., args: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., tool_call_id: _Optional[str] = ..., provider_identifier: _Optional[str] = ..., tool_name: _Optional[str] = ..., smart_mode_approval: _Optional[_Union[SmartModeApproval, _Mapping]] = ..., server_identifier: _Optional[str] = ...) -> None: ...

class McpResult(_message.Message):
    __slots__ = ("success", "error", "rejected", "permission_denied", "tool_not_found", "server_not_found", "approved")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    TOOL_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    SERVER_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    success: McpSuccess
    error: McpError
    rejected: McpRejected
    permission_denied: McpPermissionDenied
    tool_not_found: McpToolNotFound
    server_not_found: McpServerNotFound
    approved: McpApproved
    def __init__(self, success: _Optional[_Union[McpSuccess, _Mapping]] = ..., error: _Optional[_Union[McpError, _Mapping]] = ..., rejected: _Optional[_Union[McpRejected, _Mapping]] = ..., permission_denied: _Optional[_Union[McpPermissionDenied, _Mapping]] = ..., tool_not_found: _Optional[_Union[McpToolNotFound, _Mapping]] = ..., server_not_found: _Optional[_Union[McpServerNotFound, _Mapping]] = ..., approved: _Optional[_Union[McpApproved, _Mapping]] = ...) -> None: ...

class McpSuccess(_message.Message):
    __slots__ = ("content", "is_error", "structured_content")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: _containers.RepeatedCompositeFieldContainer[McpToolResultContentItem]
    is_error: bool
    structured_content: _struct_pb2.Struct
    def __init__(self, content: _Optional[_Iterable[_Union[McpToolResultContentItem, _Mapping]]] = ..., is_error: _Optional[bool] = ..., structured_content: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class McpToolResultContentItem(_message.Message):
    __slots__ = ("text", "image")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    text: McpTextContent
    image: McpImageContent
    def __init__(self, text: _Optional[_Union[McpTextContent, _Mapping]] = ..., image: _Optional[_Union[McpImageContent, _Mapping]] = ...) -> None: ...

class McpTextContent(_message.Message):
    __slots__ = ("text", "output_location")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LOCATION_FIELD_NUMBER: _ClassVar[int]
    text: str
    output_location: OutputLocation
    def __init__(self, text: _Optional[str] = ..., output_location: _Optional[_Union[OutputLocation, _Mapping]] = ...) -> None: ...

class McpImageContent(_message.Message):
    __slots__ = ("data", "mime_type")
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    mime_type: str
    def __init__(self, data: _Optional[bytes] = ..., mime_type: _Optional[str] = ...) -> None: ...

class McpError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class McpRejected(_message.Message):
    __slots__ = ("reason", "is_readonly")
    REASON_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    reason: str
    is_readonly: bool
    def __init__(self, reason: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class McpPermissionDenied(_message.Message):
    __slots__ = ("error", "is_readonly")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    error: str
    is_readonly: bool
    def __init__(self, error: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class McpToolNotFound(_message.Message):
    __slots__ = ("name", "available_tools")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    name: str
    available_tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., available_tools: _Optional[_Iterable[str]] = ...) -> None: ...

class McpServerNotFound(_message.Message):
    __slots__ = ("name", "available_servers")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_SERVERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    available_servers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., available_servers: _Optional[_Iterable[str]] = ...) -> None: ...

class McpApproved(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class McpToolCall(_message.Message):
    __slots__ = ("args", "result", "description")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    args: McpArgs
    result: McpToolResult
    description: str
    def __init__(self, args: _Optional[_Union[McpArgs, _Mapping]] = ..., result: _Optional[_Union[McpToolResult, _Mapping]] = ..., description: _Optional[str] = ...) -> None: ...

class McpToolResult(_message.Message):
    __slots__ = ("success", "error", "rejected", "permission_denied")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    success: McpSuccess
    error: McpToolError
    rejected: McpRejected
    permission_denied: McpPermissionDenied
    def __init__(self, success: _Optional[_Union[McpSuccess, _Mapping]] = ..., error: _Optional[_Union[McpToolError, _Mapping]] = ..., rejected: _Optional[_Union[McpRejected, _Mapping]] = ..., permission_denied: _Optional[_Union[McpPermissionDenied, _Mapping]] = ...) -> None: ...

class McpToolError(_message.Message):
    __slots__ = ("error", "read_tool_def_reminder")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    READ_TOOL_DEF_REMINDER_FIELD_NUMBER: _ClassVar[int]
    error: str
    read_tool_def_reminder: str
    def __init__(self, error: _Optional[str] = ..., read_tool_def_reminder: _Optional[str] = ...) -> None: ...

class ReadMcpResourceExecArgs(_message.Message):
    __slots__ = ("server", "uri", "download_path", "tool_call_id", "smart_mode_approval")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    DOWNLOAD_PATH_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SMART_MODE_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    server: str
    uri: str
    download_path: str
    tool_call_id: str
    smart_mode_approval: SmartModeApproval
    def __init__(self, server: _Optional[str] = ..., uri: _Optional[str] = ..., download_path: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., smart_mode_approval: _Optional[_Union[SmartModeApproval, _Mapping]] = ...) -> None: ...

class ReadMcpResourceExecResult(_message.Message):
    __slots__ = ("success", "error", "rejected", "not_found")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    success: ReadMcpResourceSuccess
    error: ReadMcpResourceError
    rejected: ReadMcpResourceRejected
    not_found: ReadMcpResourceNotFound
    def __init__(self, success: _Optional[_Union[ReadMcpResourceSuccess, _Mapping]] = ..., error: _Optional[_Union[ReadMcpResourceError, _Mapping]] = ..., rejected: _Optional[_Union[ReadMcpResourceRejected, _Mapping]] = ..., not_found: _Optional[_Union[ReadMcpResourceNotFound, _Mapping]] = ...) -> None: ...

class ReadMcpResourceSuccess(_message.Message):
    __slots__ = ("uri", "name", "mime_type", "download_path", "text", "blob")
    URI_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    DOWNLOAD_PATH_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    BLOB_FIELD_NUMBER: _ClassVar[int]
    uri: str
    name: str
    mime_type: str
    download_path: str
    text: str
    blob: bytes
    def __init__(self, uri: _Optional[str] = ..., name: _Optional[str] = ..., mime_type: _Optional[str] = ..., download_path: _Optional[str] = ..., text: _Optional[str] = ..., blob: _Optional[bytes] = ...) -> None: ...

class ReadMcpResourceError(_message.Message):
    __slots__ = ("uri", "error")
    URI_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    uri: str
    error: str
    def __init__(self, uri: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ReadMcpResourceRejected(_message.Message):
    __slots__ = ("uri", "reason")
    URI_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    uri: str
    reason: str
    def __init__(self, uri: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReadMcpResourceNotFound(_message.Message):
    __slots__ = ("uri",)
    URI_FIELD_NUMBER: _ClassVar[int]
    uri: str
    def __init__(self, uri: _Optional[str] = ...) -> None: ...

class ReadMcpResourceToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: ReadMcpResourceExecArgs
    result: ReadMcpResourceExecResult
    def __init__(self, args: _Optional[_Union[ReadMcpResourceExecArgs, _Mapping]] = ..., result: _Optional[_Union[ReadMcpResourceExecResult, _Mapping]] = ...) -> None: ...

class CancelSubagentAction(_message.Message):
    __slots__ = ("subagent_id",)
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    subagent_id: str
    def __init__(self, subagent_id: _Optional[str] = ...) -> None: ...

class BackgroundShellAction(_message.Message):
    __slots__ = ("tool_call_id",)
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    def __init__(self, tool_call_id: _Optional[str] = ...) -> None: ...

class BackgroundSubagentAction(_message.Message):
    __slots__ = ("tool_call_id",)
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    def __init__(self, tool_call_id: _Optional[str] = ...) -> None: ...

class ForceBackgroundShellArgs(_message.Message):
    __slots__ = ("tool_call_id",)
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    def __init__(self, tool_call_id: _Optional[str] = ...) -> None: ...

class ForceBackgroundShellResult(_message.Message):
    __slots__ = ("status", "shell_result")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SHELL_RESULT_FIELD_NUMBER: _ClassVar[int]
    status: ForceBackgroundShellStatus
    shell_result: ShellResult
    def __init__(self, status: _Optional[_Union[ForceBackgroundShellStatus, str]] = ..., shell_result: _Optional[_Union[ShellResult, _Mapping]] = ...) -> None: ...

class ForceBackgroundSubagentArgs(_message.Message):
    __slots__ = ("tool_call_id",)
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    def __init__(self, tool_call_id: _Optional[str] = ...) -> None: ...

class ForceBackgroundSubagentResult(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: ForceBackgroundSubagentStatus
    def __init__(self, status: _Optional[_Union[ForceBackgroundSubagentStatus, str]] = ...) -> None: ...

class CommunicateUpdateHistoryEntry(_message.Message):
    __slots__ = ("step", "message_index")
    STEP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    step: str
    message_index: int
    def __init__(self, step: _Optional[str] = ..., message_index: _Optional[int] = ...) -> None: ...

class CommunicateUpdateTurnState(_message.Message):
    __slots__ = ("history", "final_summary", "completed_subtitle")
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    FINAL_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_SUBTITLE_FIELD_NUMBER: _ClassVar[int]
    history: _containers.RepeatedCompositeFieldContainer[CommunicateUpdateHistoryEntry]
    final_summary: str
    completed_subtitle: str
    def __init__(self, history: _Optional[_Iterable[_Union[CommunicateUpdateHistoryEntry, _Mapping]]] = ..., final_summary: _Optional[str] = ..., completed_subtitle: _Optional[str] = ...) -> None: ...

class RequestContextArgs(_message.Message):
    __slots__ = ("notes_session_id", "workspace_id", "use_cached")
    NOTES_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    USE_CACHED_FIELD_NUMBER: _ClassVar[int]
    notes_session_id: str
    workspace_id: str
    use_cached: bool
    def __init__(self, notes_session_id: _Optional[str] = ..., workspace_id: _Optional[str] = ..., use_cached: _Optional[bool] = ...) -> None: ...

class RequestContextResult(_message.Message):
    __slots__ = ("success", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    success: RequestContextSuccess
    error: RequestContextError
    rejected: RequestContextRejected
    def __init__(self, success: _Optional[_Union[RequestContextSuccess, _Mapping]] = ..., error: _Optional[_Union[RequestContextError, _Mapping]] = ..., rejected: _Optional[_Union[RequestContextRejected, _Mapping]] = ...) -> None: ...

class RequestContextSuccess(_message.Message):
    __slots__ = ("request_context", "served_from_disk_cache")
    REQUEST_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    SERVED_FROM_DISK_CACHE_FIELD_NUMBER: _ClassVar[int]
    request_context: RequestContext
    served_from_disk_cache: bool
    def __init__(self, request_context: _Optional[_Union[RequestContext, _Mapping]] = ..., served_from_disk_cache: _Optional[bool] = ...) -> None: ...

class RequestContextError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class RequestContextRejected(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class GetDefaultModelForCliResponse(_message.Message):
    __slots__ = ("model",)
    MODEL_FIELD_NUMBER: _ClassVar[int]
    model: ModelDetails
    def __init__(self, model: _Optional[_Union[ModelDetails, _Mapping]] = ...) -> None: ...

class SummarizeAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SummaryUpdate(_message.Message):
    __slots__ = ("summary",)
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    summary: str
    def __init__(self, summary: _Optional[str] = ...) -> None: ...

class SummaryStartedUpdate(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SummaryCompletedUpdate(_message.Message):
    __slots__ = ("hook_message", "failed")
    HOOK_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    hook_message: str
    failed: bool
    def __init__(self, hook_message: _Optional[str] = ..., failed: _Optional[bool] = ...) -> None: ...

class ConversationSummary(_message.Message):
    __slots__ = ("summary",)
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    summary: str
    def __init__(self, summary: _Optional[str] = ...) -> None: ...

class ConversationSummaryArchive(_message.Message):
    __slots__ = ("summarized_messages", "summary", "window_tail", "summary_message")
    SUMMARIZED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    WINDOW_TAIL_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    summarized_messages: _containers.RepeatedScalarFieldContainer[bytes]
    summary: str
    window_tail: int
    summary_message: bytes
    def __init__(self, summarized_messages: _Optional[_Iterable[bytes]] = ..., summary: _Optional[str] = ..., window_tail: _Optional[int] = ..., summary_message: _Optional[bytes] = ...) -> None: ...
