"""Providers, their models and service settings: typed, synchronous queries over migration 2
(with migration 5's ``replay_reasoning``, migration 8's model prices and migration 11's
``prompt_cache_key``). The image model is a setting naming one model (no column: a second
image model cannot exist).

Why typed records instead of peewee rows: the console, the model catalog and the provider
router all read this data, and none of them should see a peewee object or, except for the one
record built for sending requests (``ProviderConnection``), a provider's key. ``ProviderRecord``
is safe to serialise to a client: it says ``has_api_key`` and nulls every sealed header value.

Secrets are sealed at rest (``store.base.secrets``): a provider's key, every custom header value the
user did not mark public (``public_headers``; a name ``is_secret_header`` recognises is never
public) and the web search key are written sealed and opened only where the real value is
needed (``ProviderConnection``, ``WebSearchConfig``). The stored form is the flag: a sealed
header value is secret, a plaintext one public, so no second record of it can disagree. One
that does not open under this server's key raises ``KeyUnreadable`` naming its owner there, and
shows as ``unreadable`` / ``key_unreadable`` ("key unreadable, set it again") in the client's
records.

Every function takes the peewee database and runs on the calling thread (callers on an event
loop use ``asyncio.to_thread``). Writes run in one transaction each; validation failures raise
``Invalid`` (naming the field), a missing row ``NotFound`` and a rule that the current state
forbids ``Conflict``, each carrying a message that never contains a key or header value.
Times are stored as UTC milliseconds since the epoch and shown as ISO-8601 UTC with
milliseconds (``2025-01-02T03:04:05.678Z``).

One module per record (``providers``, ``models``, ``settings`` for observability,
``web_search``, ``image_model``, what a model is for (``model_kinds``), the shipped
``price_list`` a new model's prices come from, the prices a provider's last discovery read
from its own listing (``listing_prices``), a provider's key pool ``provider_keys``,
``routing`` for where Auto and Cursor's model ids run, ``budgets`` for the limits per person)
over what they share:
``errors``, ``limits``, ``checks``, the sealing of secrets (``sealing``), custom headers
(``headers``), a provider's real values and key pool (``connections``), the image model's mark
(``image_mark``), the tables (``tables``) and the startup sealing of an older version's
plaintext (``plaintext_secrets``). This module names the public surface; callers import from
``store.catalog``, never from its modules.
"""

from actors.conversation.request import IMAGE_PROVIDER_TYPES, REASONING_EFFORTS
from actors.conversation.secret import (
    SECRET_HEADER_FRAGMENTS,
    SECRET_HEADER_NAMES,
    is_secret_header,
)
from store.catalog.budgets import (
    BUDGETS_KEY,
    MAX_ALLOWED_MODELS,
    MAX_BUDGET_OVERRIDES,
    MAX_BUDGET_USD,
    BudgetsSettings,
    Limits,
    get_budgets,
    update_budgets,
)
from store.catalog.connections import MAIN_KEY_ID, OPENAI_API_HOST, OpenedKey, ProviderConnection
from store.catalog.errors import (
    KEY_UNREADABLE,
    CatalogError,
    Conflict,
    Invalid,
    KeyUnreadable,
    NotFound,
    more_problems,
)
from store.catalog.headers import RESERVED_HEADER_NAMES
from store.catalog.image_mark import IMAGE_MODEL_KEY, ImageModelSetting
from store.catalog.image_model import (
    get_image_model,
    has_image_model,
    image_model_connection,
    set_image_model,
)
from store.catalog.limits import (
    INT32_MAX,
    INT32_MIN,
    MAX_FALLBACKS,
    MAX_HEADER_NAME_CHARS,
    MAX_HEADER_VALUE_CHARS,
    MAX_HEADERS,
    MAX_KEY_CHARS,
    MAX_KEY_LABEL_CHARS,
    MAX_KEYS_PER_PROVIDER,
    MAX_MODEL_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_URL_CHARS,
    PositiveInt,
)
from store.catalog.listing_prices import LISTING_PRICES_TTL_S, fresh_listing, keep_listing
from store.catalog.model_kinds import CHAT, IMAGE, KINDS, generates_images, is_chat, kind_by_name
from store.catalog.models import (
    PRICE_FIELDS,
    ModelInput,
    ModelRecord,
    all_models,
    delete_model,
    enabled_models,
    has_model,
    model_route_parts,
    save_models,
)
from store.catalog.plaintext_secrets import seal_plaintext_secrets
from store.catalog.price_list import (
    FROM_LIST,
    FROM_PROVIDER,
    FROM_USER,
    ListingPrices,
    PriceList,
    Prices,
    listed_prices,
    price_list,
)
from store.catalog.provider_keys import (
    ProviderKeyInput,
    ProviderKeyRecord,
    ProviderKeyUpdate,
    add_provider_key,
    delete_provider_key,
    list_provider_keys,
    update_provider_key,
)
from store.catalog.providers import (
    ANTHROPIC,
    GEMINI,
    PROVIDER_TYPES,
    ProviderInput,
    ProviderRecord,
    create_provider,
    delete_provider,
    iso_utc,
    list_providers,
    provider_connection,
    update_provider,
)
from store.catalog.routing import (
    MAX_ROUTES,
    ROUTING_KEY,
    AutoSetting,
    RoutingEntry,
    RoutingSettings,
    get_routing,
    model_ids,
    update_routing,
)
from store.catalog.settings import (
    OBSERVABILITY_KEY,
    ObservabilitySettings,
    get_observability,
    update_observability,
)
from store.catalog.tables import CACHE_KEY_AUTO, CACHE_KEY_SETTINGS
from store.catalog.web_search import (
    WEB_SEARCH_BACKENDS,
    WEB_SEARCH_KEY,
    WebSearchConfig,
    WebSearchInput,
    WebSearchSettings,
    get_web_search,
    update_web_search,
    web_search_config,
)

__all__ = [
    "ANTHROPIC",
    "BUDGETS_KEY",
    "CACHE_KEY_AUTO",
    "CACHE_KEY_SETTINGS",
    "CHAT",
    "FROM_LIST",
    "FROM_PROVIDER",
    "FROM_USER",
    "GEMINI",
    "IMAGE",
    "IMAGE_MODEL_KEY",
    "IMAGE_PROVIDER_TYPES",
    "INT32_MAX",
    "INT32_MIN",
    "KEY_UNREADABLE",
    "KINDS",
    "LISTING_PRICES_TTL_S",
    "MAIN_KEY_ID",
    "MAX_ALLOWED_MODELS",
    "MAX_BUDGET_OVERRIDES",
    "MAX_BUDGET_USD",
    "MAX_FALLBACKS",
    "MAX_HEADERS",
    "MAX_HEADER_NAME_CHARS",
    "MAX_HEADER_VALUE_CHARS",
    "MAX_KEYS_PER_PROVIDER",
    "MAX_KEY_CHARS",
    "MAX_KEY_LABEL_CHARS",
    "MAX_MODEL_ID_CHARS",
    "MAX_NAME_CHARS",
    "MAX_ROUTES",
    "MAX_URL_CHARS",
    "OBSERVABILITY_KEY",
    "OPENAI_API_HOST",
    "PRICE_FIELDS",
    "PROVIDER_TYPES",
    "REASONING_EFFORTS",
    "RESERVED_HEADER_NAMES",
    "ROUTING_KEY",
    "SECRET_HEADER_FRAGMENTS",
    "SECRET_HEADER_NAMES",
    "WEB_SEARCH_BACKENDS",
    "WEB_SEARCH_KEY",
    "AutoSetting",
    "BudgetsSettings",
    "CatalogError",
    "Conflict",
    "ImageModelSetting",
    "Invalid",
    "KeyUnreadable",
    "Limits",
    "ListingPrices",
    "ModelInput",
    "ModelRecord",
    "NotFound",
    "ObservabilitySettings",
    "OpenedKey",
    "PositiveInt",
    "PriceList",
    "Prices",
    "ProviderConnection",
    "ProviderInput",
    "ProviderKeyInput",
    "ProviderKeyRecord",
    "ProviderKeyUpdate",
    "ProviderRecord",
    "RoutingEntry",
    "RoutingSettings",
    "WebSearchConfig",
    "WebSearchInput",
    "WebSearchSettings",
    "add_provider_key",
    "all_models",
    "create_provider",
    "delete_model",
    "delete_provider",
    "delete_provider_key",
    "enabled_models",
    "fresh_listing",
    "generates_images",
    "get_budgets",
    "get_image_model",
    "get_observability",
    "get_routing",
    "get_web_search",
    "has_image_model",
    "has_model",
    "image_model_connection",
    "is_chat",
    "is_secret_header",
    "iso_utc",
    "keep_listing",
    "kind_by_name",
    "list_provider_keys",
    "list_providers",
    "listed_prices",
    "model_ids",
    "model_route_parts",
    "more_problems",
    "price_list",
    "provider_connection",
    "save_models",
    "seal_plaintext_secrets",
    "set_image_model",
    "update_budgets",
    "update_observability",
    "update_provider",
    "update_provider_key",
    "update_routing",
    "update_web_search",
    "web_search_config",
]
