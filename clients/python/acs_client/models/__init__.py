"""Contains all the data models used in inputs/outputs"""

from .account_delete_request import AccountDeleteRequest
from .actor_type import ActorType
from .admin_account import AdminAccount
from .admin_account_data import AdminAccountData
from .admin_account_detail import AdminAccountDetail
from .admin_account_detail_data import AdminAccountDetailData
from .admin_account_page import AdminAccountPage
from .admin_comp_request import AdminCompRequest
from .admin_credits_request import AdminCreditsRequest
from .admin_feature import AdminFeature
from .admin_feature_data import AdminFeatureData
from .admin_feature_list import AdminFeatureList
from .admin_feature_update import AdminFeatureUpdate
from .admin_fleet import AdminFleet
from .admin_fleet_data import AdminFleetData
from .admin_ledger_row import AdminLedgerRow
from .admin_machine_count import AdminMachineCount
from .admin_page_meta import AdminPageMeta
from .admin_queue import AdminQueue
from .admin_replica import AdminReplica
from .admin_support_page_meta import AdminSupportPageMeta
from .admin_support_report import AdminSupportReport
from .admin_support_report_data import AdminSupportReportData
from .admin_support_report_page import AdminSupportReportPage
from .admin_usage import AdminUsage
from .agent import Agent
from .agent_create import AgentCreate
from .agent_create_metadata_type_0 import AgentCreateMetadataType0
from .agent_data import AgentData
from .agent_list import AgentList
from .agent_rollback_request import AgentRollbackRequest
from .agent_spec import AgentSpec
from .agent_spec_metadata import AgentSpecMetadata
from .agent_update import AgentUpdate
from .agent_update_metadata_type_0 import AgentUpdateMetadataType0
from .agent_version import AgentVersion
from .agent_version_list import AgentVersionList
from .api_access import ApiAccess
from .api_key import ApiKey
from .api_key_list import ApiKeyList
from .api_key_request import ApiKeyRequest
from .apply_request import ApplyRequest
from .attempt_error import AttemptError
from .attempt_trigger import AttemptTrigger
from .audit_actor import AuditActor
from .audit_event import AuditEvent
from .audit_event_page import AuditEventPage
from .audit_target import AuditTarget
from .avatar_request import AvatarRequest
from .block import Block
from .catalog import Catalog
from .catalog_apps import CatalogApps
from .catalog_data import CatalogData
from .catalog_models import CatalogModels
from .catalog_runtime_versions import CatalogRuntimeVersions
from .category import Category
from .change_kind import ChangeKind
from .chat_relay_identity import ChatRelayIdentity
from .chat_relay_identity_data import ChatRelayIdentityData
from .chat_relay_identity_list import ChatRelayIdentityList
from .chat_relay_identity_provision import ChatRelayIdentityProvision
from .chat_relay_identity_update import ChatRelayIdentityUpdate
from .checkpoint import Checkpoint
from .claimable_user import ClaimableUser
from .claimable_user_created_response import ClaimableUserCreatedResponse
from .claimed_user import ClaimedUser
from .claimed_user_data import ClaimedUserData
from .config_selection import ConfigSelection
from .config_selection_applied import ConfigSelectionApplied
from .config_selection_requested import ConfigSelectionRequested
from .connection import Connection
from .connection_list import ConnectionList
from .connection_provider import ConnectionProvider
from .connection_provider_create import ConnectionProviderCreate
from .connection_provider_data import ConnectionProviderData
from .connection_provider_link import ConnectionProviderLink
from .connection_provider_link_list import ConnectionProviderLinkList
from .connection_provider_list import ConnectionProviderList
from .connection_provider_update import ConnectionProviderUpdate
from .connection_status import ConnectionStatus
from .conversation import Conversation
from .conversation_create_request import ConversationCreateRequest
from .conversation_create_request_labels_type_0 import ConversationCreateRequestLabelsType0
from .conversation_data import ConversationData
from .conversation_labels import ConversationLabels
from .conversation_list import ConversationList
from .conversation_status import ConversationStatus
from .conversation_wake_response import ConversationWakeResponse
from .conversation_wake_response_data import ConversationWakeResponseData
from .created_key import CreatedKey
from .created_key_data import CreatedKeyData
from .credential_set_create import CredentialSetCreate
from .credential_set_update import CredentialSetUpdate
from .credential_value import CredentialValue
from .credit_ledger_entry import CreditLedgerEntry
from .credit_rates import CreditRates
from .credits_ import Credits
from .credits_response import CreditsResponse
from .delivery import Delivery
from .delivery_page_meta import DeliveryPageMeta
from .delivery_status import DeliveryStatus
from .device_authorization import DeviceAuthorization
from .device_login_request import DeviceLoginRequest
from .device_token_request import DeviceTokenRequest
from .directory_entry import DirectoryEntry
from .document import Document
from .document_spec import DocumentSpec
from .download_export_response_200 import DownloadExportResponse200
from .egress_event import EgressEvent
from .egress_event_list import EgressEventList
from .email_change_pending import EmailChangePending
from .email_change_pending_data import EmailChangePendingData
from .email_change_request import EmailChangeRequest
from .endpoint_status import EndpointStatus
from .entry_kind import EntryKind
from .environment import Environment
from .environment_create import EnvironmentCreate
from .environment_create_env_vars_type_0 import EnvironmentCreateEnvVarsType0
from .environment_create_metadata_type_0 import EnvironmentCreateMetadataType0
from .environment_create_packages_type_0 import EnvironmentCreatePackagesType0
from .environment_data import EnvironmentData
from .environment_env_vars import EnvironmentEnvVars
from .environment_list import EnvironmentList
from .environment_metadata import EnvironmentMetadata
from .environment_packages import EnvironmentPackages
from .environment_secret_value import EnvironmentSecretValue
from .environment_update import EnvironmentUpdate
from .environment_update_env_vars_type_0 import EnvironmentUpdateEnvVarsType0
from .environment_update_metadata_type_0 import EnvironmentUpdateMetadataType0
from .environment_update_packages_type_0 import EnvironmentUpdatePackagesType0
from .error import Error
from .error_errors_type_0 import ErrorErrorsType0
from .event_kind import EventKind
from .event_stream import EventStream
from .execution_limits import ExecutionLimits
from .export import Export
from .export_data import ExportData
from .export_list import ExportList
from .export_status import ExportStatus
from .file_encoding import FileEncoding
from .first_request import FirstRequest
from .first_request_placeholders import FirstRequestPlaceholders
from .grant_ref import GrantRef
from .grant_status import GrantStatus
from .history_entry import HistoryEntry
from .history_entry_list import HistoryEntryList
from .hit_type import HitType
from .image_input import ImageInput
from .image_media_type import ImageMediaType
from .inference import Inference
from .inference_credential_set import InferenceCredentialSet
from .inference_credential_set_data import InferenceCredentialSetData
from .inference_credential_set_list import InferenceCredentialSetList
from .inference_credential_status import InferenceCredentialStatus
from .inference_credential_status_data import InferenceCredentialStatusData
from .inference_credential_status_list import InferenceCredentialStatusList
from .inference_origin import InferenceOrigin
from .inference_scope import InferenceScope
from .interrupt_response import InterruptResponse
from .interrupt_response_data import InterruptResponseData
from .labels_patch import LabelsPatch
from .labels_patch_labels import LabelsPatchLabels
from .ledger_reason import LedgerReason
from .link_attempt import LinkAttempt
from .link_attempt_create import LinkAttemptCreate
from .link_attempt_data import LinkAttemptData
from .link_attempt_kind import LinkAttemptKind
from .link_attempt_list import LinkAttemptList
from .link_attempt_state import LinkAttemptState
from .link_failure import LinkFailure
from .list_webhook_deliveries_status import ListWebhookDeliveriesStatus
from .liveness_response import LivenessResponse
from .liveness_status import LivenessStatus
from .log_event import LogEvent
from .log_event_list_response import LogEventListResponse
from .log_event_page import LogEventPage
from .login_request import LoginRequest
from .machine_provider import MachineProvider
from .machine_state_view import MachineStateView
from .mcp_server import McpServer
from .mcp_server_entry import McpServerEntry
from .mcp_server_entry_env_item import McpServerEntryEnvItem
from .mcp_server_entry_headers_item import McpServerEntryHeadersItem
from .me import Me
from .me_data import MeData
from .me_key import MeKey
from .message import Message
from .message_data import MessageData
from .networking_config import NetworkingConfig
from .networking_type import NetworkingType
from .not_acceptable import NotAcceptable
from .not_acceptable_errors import NotAcceptableErrors
from .o_auth_client import OAuthClient
from .o_auth_client_create_request import OAuthClientCreateRequest
from .o_auth_client_data import OAuthClientData
from .o_auth_client_list import OAuthClientList
from .o_auth_client_update_request import OAuthClientUpdateRequest
from .o_auth_error import OAuthError
from .o_auth_token_request import OAuthTokenRequest
from .o_auth_token_response import OAuthTokenResponse
from .onboarding import Onboarding
from .onboarding_response import OnboardingResponse
from .openai_grant import OpenaiGrant
from .outcome import Outcome
from .page_meta import PageMeta
from .page_order import PageOrder
from .password_change_request import PasswordChangeRequest
from .permission_answer_request import PermissionAnswerRequest
from .permission_policy import PermissionPolicy
from .permission_policy_additional_property import PermissionPolicyAdditionalProperty
from .prompt_request import PromptRequest
from .prompt_response import PromptResponse
from .prompt_response_data import PromptResponseData
from .provider_kind import ProviderKind
from .readiness_response import ReadinessResponse
from .readiness_response_checks import ReadinessResponseChecks
from .readiness_status import ReadinessStatus
from .reapply_request import ReapplyRequest
from .register_request import RegisterRequest
from .registered import Registered
from .registered_data import RegisteredData
from .report_status import ReportStatus
from .repository import Repository
from .respond_to import RespondTo
from .role import Role
from .row import Row
from .row_list import RowList
from .runner import Runner
from .runner_create_request import RunnerCreateRequest
from .runner_created import RunnerCreated
from .runner_created_data import RunnerCreatedData
from .runner_data import RunnerData
from .runner_data_data import RunnerDataData
from .runner_list import RunnerList
from .runner_list_data_item import RunnerListDataItem
from .runtime import Runtime
from .runtime_version import RuntimeVersion
from .sandbox import Sandbox
from .sandbox_change import SandboxChange
from .sandbox_changes_response import SandboxChangesResponse
from .sandbox_conversation import SandboxConversation
from .sandbox_data import SandboxData
from .sandbox_detail import SandboxDetail
from .sandbox_detail_data import SandboxDetailData
from .sandbox_diff import SandboxDiff
from .sandbox_diff_data import SandboxDiffData
from .sandbox_directory import SandboxDirectory
from .sandbox_directory_data import SandboxDirectoryData
from .sandbox_file import SandboxFile
from .sandbox_file_data import SandboxFileData
from .sandbox_list import SandboxList
from .sandbox_mode import SandboxMode
from .sandbox_providers import SandboxProviders
from .sandbox_request import SandboxRequest
from .sandbox_request_data import SandboxRequestData
from .sandbox_request_list import SandboxRequestList
from .sandbox_request_status import SandboxRequestStatus
from .sandbox_state import SandboxState
from .sandbox_status import SandboxStatus
from .sandbox_status_response import SandboxStatusResponse
from .scope import Scope
from .screenshot_media_type import ScreenshotMediaType
from .search_hit import SearchHit
from .search_hit_list import SearchHitList
from .secret import Secret
from .secret_binding import SecretBinding
from .secret_binding_create import SecretBindingCreate
from .secret_binding_data import SecretBindingData
from .secret_binding_list import SecretBindingList
from .secret_binding_source import SecretBindingSource
from .secret_binding_update import SecretBindingUpdate
from .secret_data import SecretData
from .secret_list import SecretList
from .selection_status import SelectionStatus
from .session_config import SessionConfig
from .session_config_option import SessionConfigOption
from .stage_state_name import StageStateName
from .stream_log_event import StreamLogEvent
from .subscription import Subscription
from .subscription_data import SubscriptionData
from .subscription_list import SubscriptionList
from .subscription_status import SubscriptionStatus
from .subscription_update import SubscriptionUpdate
from .support_report import SupportReport
from .support_report_data import SupportReportData
from .support_report_list import SupportReportList
from .support_report_request import SupportReportRequest
from .support_report_request_context_type_0 import SupportReportRequestContextType0
from .team_message_request import TeamMessageRequest
from .team_message_request_labels_type_0 import TeamMessageRequestLabelsType0
from .team_message_response import TeamMessageResponse
from .team_message_response_data import TeamMessageResponseData
from .team_schedule import TeamSchedule
from .team_schedule_create_request import TeamScheduleCreateRequest
from .team_schedule_data import TeamScheduleData
from .team_schedule_list import TeamScheduleList
from .team_schedule_update_request import TeamScheduleUpdateRequest
from .teammate import Teammate
from .teammate_data import TeammateData
from .teammate_list import TeammateList
from .teammate_request import TeammateRequest
from .token_auth_method import TokenAuthMethod
from .turn import Turn
from .turn_list_response import TurnListResponse
from .turn_origin import TurnOrigin
from .turn_status import TurnStatus
from .turn_usage import TurnUsage
from .turn_usage_accounting_type_0 import TurnUsageAccountingType0
from .vault import Vault
from .vault_copy_request import VaultCopyRequest
from .vault_create import VaultCreate
from .vault_create_metadata_type_0 import VaultCreateMetadataType0
from .vault_data import VaultData
from .vault_list import VaultList
from .vault_metadata import VaultMetadata
from .vault_secret import VaultSecret
from .vault_secret_data import VaultSecretData
from .vault_secret_list import VaultSecretList
from .vault_secret_value import VaultSecretValue
from .vault_update import VaultUpdate
from .vault_update_metadata_type_0 import VaultUpdateMetadataType0
from .verify_email_request import VerifyEmailRequest
from .verify_email_response import VerifyEmailResponse
from .wake_status import WakeStatus
from .webhook_attempt import WebhookAttempt
from .webhook_delivery import WebhookDelivery
from .webhook_delivery_data import WebhookDeliveryData
from .webhook_delivery_list import WebhookDeliveryList
from .webhook_endpoint import WebhookEndpoint
from .webhook_endpoint_create_request import WebhookEndpointCreateRequest
from .webhook_endpoint_data import WebhookEndpointData
from .webhook_endpoint_list import WebhookEndpointList
from .webhook_endpoint_update_request import WebhookEndpointUpdateRequest
from .webhook_endpoint_with_secret import WebhookEndpointWithSecret
from .webhook_endpoint_with_secret_data import WebhookEndpointWithSecretData

__all__ = (
    "AccountDeleteRequest",
    "ActorType",
    "AdminAccount",
    "AdminAccountData",
    "AdminAccountDetail",
    "AdminAccountDetailData",
    "AdminAccountPage",
    "AdminCompRequest",
    "AdminCreditsRequest",
    "AdminFeature",
    "AdminFeatureData",
    "AdminFeatureList",
    "AdminFeatureUpdate",
    "AdminFleet",
    "AdminFleetData",
    "AdminLedgerRow",
    "AdminMachineCount",
    "AdminPageMeta",
    "AdminQueue",
    "AdminReplica",
    "AdminSupportPageMeta",
    "AdminSupportReport",
    "AdminSupportReportData",
    "AdminSupportReportPage",
    "AdminUsage",
    "Agent",
    "AgentCreate",
    "AgentCreateMetadataType0",
    "AgentData",
    "AgentList",
    "AgentRollbackRequest",
    "AgentSpec",
    "AgentSpecMetadata",
    "AgentUpdate",
    "AgentUpdateMetadataType0",
    "AgentVersion",
    "AgentVersionList",
    "ApiAccess",
    "ApiKey",
    "ApiKeyList",
    "ApiKeyRequest",
    "ApplyRequest",
    "AttemptError",
    "AttemptTrigger",
    "AuditActor",
    "AuditEvent",
    "AuditEventPage",
    "AuditTarget",
    "AvatarRequest",
    "Block",
    "Catalog",
    "CatalogApps",
    "CatalogData",
    "CatalogModels",
    "CatalogRuntimeVersions",
    "Category",
    "ChangeKind",
    "ChatRelayIdentity",
    "ChatRelayIdentityData",
    "ChatRelayIdentityList",
    "ChatRelayIdentityProvision",
    "ChatRelayIdentityUpdate",
    "Checkpoint",
    "ClaimableUser",
    "ClaimableUserCreatedResponse",
    "ClaimedUser",
    "ClaimedUserData",
    "ConfigSelection",
    "ConfigSelectionApplied",
    "ConfigSelectionRequested",
    "Connection",
    "ConnectionList",
    "ConnectionProvider",
    "ConnectionProviderCreate",
    "ConnectionProviderData",
    "ConnectionProviderLink",
    "ConnectionProviderLinkList",
    "ConnectionProviderList",
    "ConnectionProviderUpdate",
    "ConnectionStatus",
    "Conversation",
    "ConversationCreateRequest",
    "ConversationCreateRequestLabelsType0",
    "ConversationData",
    "ConversationLabels",
    "ConversationList",
    "ConversationStatus",
    "ConversationWakeResponse",
    "ConversationWakeResponseData",
    "CreatedKey",
    "CreatedKeyData",
    "CredentialSetCreate",
    "CredentialSetUpdate",
    "CredentialValue",
    "CreditLedgerEntry",
    "CreditRates",
    "Credits",
    "CreditsResponse",
    "Delivery",
    "DeliveryPageMeta",
    "DeliveryStatus",
    "DeviceAuthorization",
    "DeviceLoginRequest",
    "DeviceTokenRequest",
    "DirectoryEntry",
    "Document",
    "DocumentSpec",
    "DownloadExportResponse200",
    "EgressEvent",
    "EgressEventList",
    "EmailChangePending",
    "EmailChangePendingData",
    "EmailChangeRequest",
    "EndpointStatus",
    "EntryKind",
    "Environment",
    "EnvironmentCreate",
    "EnvironmentCreateEnvVarsType0",
    "EnvironmentCreateMetadataType0",
    "EnvironmentCreatePackagesType0",
    "EnvironmentData",
    "EnvironmentEnvVars",
    "EnvironmentList",
    "EnvironmentMetadata",
    "EnvironmentPackages",
    "EnvironmentSecretValue",
    "EnvironmentUpdate",
    "EnvironmentUpdateEnvVarsType0",
    "EnvironmentUpdateMetadataType0",
    "EnvironmentUpdatePackagesType0",
    "Error",
    "ErrorErrorsType0",
    "EventKind",
    "EventStream",
    "ExecutionLimits",
    "Export",
    "ExportData",
    "ExportList",
    "ExportStatus",
    "FileEncoding",
    "FirstRequest",
    "FirstRequestPlaceholders",
    "GrantRef",
    "GrantStatus",
    "HistoryEntry",
    "HistoryEntryList",
    "HitType",
    "ImageInput",
    "ImageMediaType",
    "Inference",
    "InferenceCredentialSet",
    "InferenceCredentialSetData",
    "InferenceCredentialSetList",
    "InferenceCredentialStatus",
    "InferenceCredentialStatusData",
    "InferenceCredentialStatusList",
    "InferenceOrigin",
    "InferenceScope",
    "InterruptResponse",
    "InterruptResponseData",
    "LabelsPatch",
    "LabelsPatchLabels",
    "LedgerReason",
    "LinkAttempt",
    "LinkAttemptCreate",
    "LinkAttemptData",
    "LinkAttemptKind",
    "LinkAttemptList",
    "LinkAttemptState",
    "LinkFailure",
    "ListWebhookDeliveriesStatus",
    "LivenessResponse",
    "LivenessStatus",
    "LogEvent",
    "LogEventListResponse",
    "LogEventPage",
    "LoginRequest",
    "MachineProvider",
    "MachineStateView",
    "McpServer",
    "McpServerEntry",
    "McpServerEntryEnvItem",
    "McpServerEntryHeadersItem",
    "Me",
    "MeData",
    "MeKey",
    "Message",
    "MessageData",
    "NetworkingConfig",
    "NetworkingType",
    "NotAcceptable",
    "NotAcceptableErrors",
    "OAuthClient",
    "OAuthClientCreateRequest",
    "OAuthClientData",
    "OAuthClientList",
    "OAuthClientUpdateRequest",
    "OAuthError",
    "OAuthTokenRequest",
    "OAuthTokenResponse",
    "Onboarding",
    "OnboardingResponse",
    "OpenaiGrant",
    "Outcome",
    "PageMeta",
    "PageOrder",
    "PasswordChangeRequest",
    "PermissionAnswerRequest",
    "PermissionPolicy",
    "PermissionPolicyAdditionalProperty",
    "PromptRequest",
    "PromptResponse",
    "PromptResponseData",
    "ProviderKind",
    "ReadinessResponse",
    "ReadinessResponseChecks",
    "ReadinessStatus",
    "ReapplyRequest",
    "Registered",
    "RegisteredData",
    "RegisterRequest",
    "ReportStatus",
    "Repository",
    "RespondTo",
    "Role",
    "Row",
    "RowList",
    "Runner",
    "RunnerCreated",
    "RunnerCreatedData",
    "RunnerCreateRequest",
    "RunnerData",
    "RunnerDataData",
    "RunnerList",
    "RunnerListDataItem",
    "Runtime",
    "RuntimeVersion",
    "Sandbox",
    "SandboxChange",
    "SandboxChangesResponse",
    "SandboxConversation",
    "SandboxData",
    "SandboxDetail",
    "SandboxDetailData",
    "SandboxDiff",
    "SandboxDiffData",
    "SandboxDirectory",
    "SandboxDirectoryData",
    "SandboxFile",
    "SandboxFileData",
    "SandboxList",
    "SandboxMode",
    "SandboxProviders",
    "SandboxRequest",
    "SandboxRequestData",
    "SandboxRequestList",
    "SandboxRequestStatus",
    "SandboxState",
    "SandboxStatus",
    "SandboxStatusResponse",
    "Scope",
    "ScreenshotMediaType",
    "SearchHit",
    "SearchHitList",
    "Secret",
    "SecretBinding",
    "SecretBindingCreate",
    "SecretBindingData",
    "SecretBindingList",
    "SecretBindingSource",
    "SecretBindingUpdate",
    "SecretData",
    "SecretList",
    "SelectionStatus",
    "SessionConfig",
    "SessionConfigOption",
    "StageStateName",
    "StreamLogEvent",
    "Subscription",
    "SubscriptionData",
    "SubscriptionList",
    "SubscriptionStatus",
    "SubscriptionUpdate",
    "SupportReport",
    "SupportReportData",
    "SupportReportList",
    "SupportReportRequest",
    "SupportReportRequestContextType0",
    "Teammate",
    "TeammateData",
    "TeammateList",
    "TeammateRequest",
    "TeamMessageRequest",
    "TeamMessageRequestLabelsType0",
    "TeamMessageResponse",
    "TeamMessageResponseData",
    "TeamSchedule",
    "TeamScheduleCreateRequest",
    "TeamScheduleData",
    "TeamScheduleList",
    "TeamScheduleUpdateRequest",
    "TokenAuthMethod",
    "Turn",
    "TurnListResponse",
    "TurnOrigin",
    "TurnStatus",
    "TurnUsage",
    "TurnUsageAccountingType0",
    "Vault",
    "VaultCopyRequest",
    "VaultCreate",
    "VaultCreateMetadataType0",
    "VaultData",
    "VaultList",
    "VaultMetadata",
    "VaultSecret",
    "VaultSecretData",
    "VaultSecretList",
    "VaultSecretValue",
    "VaultUpdate",
    "VaultUpdateMetadataType0",
    "VerifyEmailRequest",
    "VerifyEmailResponse",
    "WakeStatus",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookDeliveryData",
    "WebhookDeliveryList",
    "WebhookEndpoint",
    "WebhookEndpointCreateRequest",
    "WebhookEndpointData",
    "WebhookEndpointList",
    "WebhookEndpointUpdateRequest",
    "WebhookEndpointWithSecret",
    "WebhookEndpointWithSecretData",
)
