//! The same checks over gRPC with the generated clients: credentials, workspace binding,
//! validation details, health and reflection.

use crate::common::*;
use lps::proto::{
    GenerateApiTokenRequest, GetCreditsRequest, HelloWorldRequest, ListVariablesRequest,
    ListWorkspacesRequest, WhoAmIRequest, account_service_client::AccountServiceClient,
    api_tokens_service_client::ApiTokensServiceClient,
    identity_service_client::IdentityServiceClient,
    workspaces_service_client::WorkspacesServiceClient,
};
use tonic::Code;
use tonic_types::StatusExt;

#[tokio::test]
async fn calls_without_a_valid_key_are_unauthenticated() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let mut client = IdentityServiceClient::new(server.grpc_channel().await);
    let status = client
        .hello_world(tonic::Request::new(HelloWorldRequest {}))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let status = client
        .who_am_i(grpc_request(
            &format!("{}zz", account.api_key),
            WhoAmIRequest {},
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(status.message(), "Unauthenticated.");
}

#[tokio::test]
async fn who_am_i_names_the_owner_and_bound_workspace() {
    let db = TestDb::new();
    let account = bootstrap(
        &db,
        &["--user-name", "Ada", "--user-email", "ada@example.com"],
    );
    let server = Server::serve(&db, &[]);
    let mut client = IdentityServiceClient::new(server.grpc_channel().await);
    let reply = client
        .who_am_i(grpc_request(&account.api_key, WhoAmIRequest {}))
        .await
        .unwrap()
        .into_inner();
    let user = reply.user.unwrap();
    assert_eq!(
        (user.id, user.name.as_str(), user.email.as_str()),
        (account.user_id, "Ada", "ada@example.com")
    );
    assert_eq!(reply.workspace_id, Some(account.workspace_id));
}

#[tokio::test]
async fn a_foreign_workspace_is_permission_denied() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let channel = server.grpc_channel().await;
    let status = WorkspacesServiceClient::new(channel.clone())
        .list_variables(grpc_request(
            &account.api_key,
            ListVariablesRequest {
                workspace_id: Some(stranger.workspace_id),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(
        status.message(),
        "Workspace not found or access not permitted."
    );
    let status = AccountServiceClient::new(channel)
        .get_credits(grpc_request(
            &account.api_key,
            GetCreditsRequest {
                workspace_id: Some(stranger.workspace_id),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
}

#[tokio::test]
async fn workspaces_are_listed_as_over_rest() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--workspace-name", "Main"]);
    let server = Server::serve(&db, &[]);
    let reply = WorkspacesServiceClient::new(server.grpc_channel().await)
        .list_workspaces(grpc_request(&account.api_key, ListWorkspacesRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.workspaces.len(), 1);
    assert_eq!(reply.workspaces[0].id, account.workspace_id);
    assert_eq!(reply.workspaces[0].slug, "main");
}

#[tokio::test]
async fn missing_fields_come_back_as_field_violations() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let status = ApiTokensServiceClient::new(server.grpc_channel().await)
        .generate_api_token(grpc_request(
            &account.api_key,
            GenerateApiTokenRequest {
                name: None,
                workspace_id: None,
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let details = status.get_error_details();
    let fields: Vec<&str> = details
        .bad_request()
        .unwrap()
        .field_violations
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, ["name", "workspace_id"]);
}

#[tokio::test]
async fn a_free_plan_is_refused_with_reason_plan_required() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--plan", "free"]);
    let server = Server::serve(&db, &[]);
    let status = ApiTokensServiceClient::new(server.grpc_channel().await)
        .generate_api_token(grpc_request(
            &account.api_key,
            GenerateApiTokenRequest {
                name: Some("k".into()),
                workspace_id: Some(account.workspace_id),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(
        status.get_error_details().error_info().unwrap().reason,
        "PLAN_REQUIRED"
    );
}

#[tokio::test]
async fn health_answers_serving_without_a_key() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let mut health =
        tonic_health::pb::health_client::HealthClient::new(server.grpc_channel().await);
    for service in ["", "lps.v1.IdentityService", "lps.v1.ApiTokensService"] {
        let reply = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap_or_else(|s| panic!("{service}: {s}"))
            .into_inner();
        assert_eq!(
            reply.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "{service}"
        );
    }
}

/// The services a reflection client of version `$version` (`v1`, `v1alpha`) is told about.
macro_rules! reflected_services {
    ($version:ident) => {{
        use tonic_reflection::pb::$version::{
            ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
            server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
        };
        let db = TestDb::new();
        bootstrap(&db, &[]);
        let server = Server::serve(&db, &[]);
        let mut client = ServerReflectionClient::new(server.grpc_channel().await);
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut replies = client
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .unwrap()
            .into_inner();
        let reply = replies.message().await.unwrap().unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else {
            panic!("expected a service list")
        };
        list.service
            .into_iter()
            .map(|s| s.name)
            .collect::<Vec<String>>()
    }};
}

#[tokio::test]
async fn reflection_lists_the_lps_services_and_health() {
    let names = reflected_services!(v1);
    for expected in [
        "lps.v1.IdentityService",
        "lps.v1.WorkspacesService",
        "lps.v1.ApiTokensService",
        "lps.v1.AccountService",
        "lps.v1.LeadsService",
        "grpc.health.v1.Health",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
}

#[tokio::test]
async fn reflection_v1alpha_answers_older_clients_too() {
    let names = reflected_services!(v1alpha);
    assert!(
        names.iter().any(|n| n == "lps.v1.LeadsService"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "grpc.health.v1.Health"),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_grpc_caller_sending_a_lead_gets_what_a_rest_caller_gets() {
    use lps::proto::{LeadInput, UpsertLeadsRequest, leads_service_client::LeadsServiceClient};
    use prost_types::{Struct, Value, value::Kind};
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Both ways").await;
    let job = upsert(
        &server,
        key,
        serde_json::json!({"campaign_id": campaign,
            "leads": [{"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let stored = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    let lead_id = stored[0]["lead_id"].as_i64().unwrap();

    let text = |s: &str| Value {
        kind: Some(Kind::StringValue(s.into())),
    };
    let object = |fields: Vec<(&str, Value)>| Value {
        kind: Some(Kind::StructValue(Struct {
            fields: fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        })),
    };
    // `lead_id` inside `values` identifies the lead, as over REST; it is no custom variable.
    let update = object(vec![(
        "values",
        object(vec![
            (
                "lead_id",
                Value {
                    kind: Some(Kind::NumberValue(lead_id as f64)),
                },
            ),
            ("first_name", text("Augusta")),
        ]),
    )]);
    let unreadable = text("not a lead");
    let mut client = LeadsServiceClient::new(server.grpc_channel().await);
    let reply = client
        .upsert_leads(grpc_request(
            key,
            UpsertLeadsRequest {
                campaign_id: Some(campaign),
                leads: vec![
                    LeadInput { lead: Some(update) },
                    LeadInput {
                        lead: Some(unreadable),
                    },
                ],
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    let status = wait_for_job(&server, key, &reply.job_id).await;
    assert_eq!(status["failed_rows"], 1, "{status}");
    assert_eq!(status["errors"][0]["index"], 1);
    let lead = server
        .get(key, &format!("/leads/get?lead_id={lead_id}"))
        .await
        .expect(200)
        .json();
    assert_eq!(lead["variables"]["first_name"], "Augusta");
    assert!(lead["variables"].get("lead_id").is_none(), "{lead}");
    assert_eq!(lead_total(&server, key, account.workspace_id).await, 1);
}
