from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Http2Config(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HTTP2_CONFIG_UNSPECIFIED: _ClassVar[Http2Config]
    HTTP2_CONFIG_FORCE_ALL_DISABLED: _ClassVar[Http2Config]
    HTTP2_CONFIG_FORCE_ALL_ENABLED: _ClassVar[Http2Config]
    HTTP2_CONFIG_FORCE_BIDI_DISABLED: _ClassVar[Http2Config]
    HTTP2_CONFIG_FORCE_BIDI_ENABLED: _ClassVar[Http2Config]
HTTP2_CONFIG_UNSPECIFIED: Http2Config
HTTP2_CONFIG_FORCE_ALL_DISABLED: Http2Config
HTTP2_CONFIG_FORCE_ALL_ENABLED: Http2Config
HTTP2_CONFIG_FORCE_BIDI_DISABLED: Http2Config
HTTP2_CONFIG_FORCE_BIDI_ENABLED: Http2Config

class BidiAppendRequest(_message.Message):
    __slots__ = ("data", "request_id", "append_seqno")
    DATA_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    APPEND_SEQNO_FIELD_NUMBER: _ClassVar[int]
    data: str
    request_id: BidiRequestId
    append_seqno: int
    def __init__(self, data: _Optional[str] = ..., request_id: _Optional[_Union[BidiRequestId, _Mapping]] = ..., append_seqno: _Optional[int] = ...) -> None: ...

class BidiRequestId(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class BidiAppendResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ErrorDetails(_message.Message):
    __slots__ = ("error", "details", "is_expected")
    class Error(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ERROR_UNSPECIFIED: _ClassVar[ErrorDetails.Error]
        ERROR_NOT_LOGGED_IN: _ClassVar[ErrorDetails.Error]
        ERROR_CUSTOM_MESSAGE: _ClassVar[ErrorDetails.Error]
        ERROR_PROVIDER_ERROR: _ClassVar[ErrorDetails.Error]
        ERROR_INTERNAL: _ClassVar[ErrorDetails.Error]
    ERROR_UNSPECIFIED: ErrorDetails.Error
    ERROR_NOT_LOGGED_IN: ErrorDetails.Error
    ERROR_CUSTOM_MESSAGE: ErrorDetails.Error
    ERROR_PROVIDER_ERROR: ErrorDetails.Error
    ERROR_INTERNAL: ErrorDetails.Error
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    IS_EXPECTED_FIELD_NUMBER: _ClassVar[int]
    error: ErrorDetails.Error
    details: CustomErrorDetails
    is_expected: bool
    def __init__(self, error: _Optional[_Union[ErrorDetails.Error, str]] = ..., details: _Optional[_Union[CustomErrorDetails, _Mapping]] = ..., is_expected: _Optional[bool] = ...) -> None: ...

class CustomErrorDetails(_message.Message):
    __slots__ = ("title", "detail", "allow_command_links_potentially_unsafe_please_only_use_for_handwritten_trusted_markdown", "is_retryable", "show_request_id", "should_show_immediate_error")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    ALLOW_COMMAND_LINKS_POTENTIALLY_UNSAFE_PLEASE_ONLY_USE_FOR_HANDWRITTEN_TRUSTED_MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    IS_RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    SHOW_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHOW_IMMEDIATE_ERROR_FIELD_NUMBER: _ClassVar[int]
    title: str
    detail: str
    allow_command_links_potentially_unsafe_please_only_use_for_handwritten_trusted_markdown: bool
    is_retryable: bool
    show_request_id: bool
    should_show_immediate_error: bool
    def __init__(self, title: _Optional[str] = ..., detail: _Optional[str] = ..., allow_command_links_potentially_unsafe_please_only_use_for_handwritten_trusted_markdown: _Optional[bool] = ..., is_retryable: _Optional[bool] = ..., show_request_id: _Optional[bool] = ..., should_show_immediate_error: _Optional[bool] = ...) -> None: ...

class AvailableModelsResponse(_message.Message):
    __slots__ = ("models", "model_names")
    class AvailableModel(_message.Message):
        __slots__ = ("name", "supports_agent", "supports_thinking", "context_token_limit", "client_display_name", "server_model_name", "is_user_added", "inputbox_short_model_name")
        NAME_FIELD_NUMBER: _ClassVar[int]
        SUPPORTS_AGENT_FIELD_NUMBER: _ClassVar[int]
        SUPPORTS_THINKING_FIELD_NUMBER: _ClassVar[int]
        CONTEXT_TOKEN_LIMIT_FIELD_NUMBER: _ClassVar[int]
        CLIENT_DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
        SERVER_MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
        IS_USER_ADDED_FIELD_NUMBER: _ClassVar[int]
        INPUTBOX_SHORT_MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
        name: str
        supports_agent: bool
        supports_thinking: bool
        context_token_limit: int
        client_display_name: str
        server_model_name: str
        is_user_added: bool
        inputbox_short_model_name: str
        def __init__(self, name: _Optional[str] = ..., supports_agent: _Optional[bool] = ..., supports_thinking: _Optional[bool] = ..., context_token_limit: _Optional[int] = ..., client_display_name: _Optional[str] = ..., server_model_name: _Optional[str] = ..., is_user_added: _Optional[bool] = ..., inputbox_short_model_name: _Optional[str] = ...) -> None: ...
    MODELS_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAMES_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[AvailableModelsResponse.AvailableModel]
    model_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, models: _Optional[_Iterable[_Union[AvailableModelsResponse.AvailableModel, _Mapping]]] = ..., model_names: _Optional[_Iterable[str]] = ...) -> None: ...

class AgentUrlConfig(_message.Message):
    __slots__ = ("agent_url", "agentn_url")
    AGENT_URL_FIELD_NUMBER: _ClassVar[int]
    AGENTN_URL_FIELD_NUMBER: _ClassVar[int]
    agent_url: str
    agentn_url: str
    def __init__(self, agent_url: _Optional[str] = ..., agentn_url: _Optional[str] = ...) -> None: ...

class GetServerConfigResponse(_message.Message):
    __slots__ = ("config_version", "http2_config", "agent_url_config")
    CONFIG_VERSION_FIELD_NUMBER: _ClassVar[int]
    HTTP2_CONFIG_FIELD_NUMBER: _ClassVar[int]
    AGENT_URL_CONFIG_FIELD_NUMBER: _ClassVar[int]
    config_version: str
    http2_config: Http2Config
    agent_url_config: AgentUrlConfig
    def __init__(self, config_version: _Optional[str] = ..., http2_config: _Optional[_Union[Http2Config, str]] = ..., agent_url_config: _Optional[_Union[AgentUrlConfig, _Mapping]] = ...) -> None: ...

class GetDefaultModelResponse(_message.Message):
    __slots__ = ("model", "thinking_model", "max_mode")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    THINKING_MODEL_FIELD_NUMBER: _ClassVar[int]
    MAX_MODE_FIELD_NUMBER: _ClassVar[int]
    model: str
    thinking_model: str
    max_mode: bool
    def __init__(self, model: _Optional[str] = ..., thinking_model: _Optional[str] = ..., max_mode: _Optional[bool] = ...) -> None: ...

class GetDefaultModelNudgeDataResponse(_message.Message):
    __slots__ = ("nudge_date", "should_default_switch_on_new_chat", "models_with_no_default_switch")
    NUDGE_DATE_FIELD_NUMBER: _ClassVar[int]
    SHOULD_DEFAULT_SWITCH_ON_NEW_CHAT_FIELD_NUMBER: _ClassVar[int]
    MODELS_WITH_NO_DEFAULT_SWITCH_FIELD_NUMBER: _ClassVar[int]
    nudge_date: str
    should_default_switch_on_new_chat: bool
    models_with_no_default_switch: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, nudge_date: _Optional[str] = ..., should_default_switch_on_new_chat: _Optional[bool] = ..., models_with_no_default_switch: _Optional[_Iterable[str]] = ...) -> None: ...
