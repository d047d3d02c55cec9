//! Completes the OpenAPI document gathered from the handlers with what every operation shares:
//! the bearer security scheme, the rate-limit headers, and the 401, 429 and 500 responses.

use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{Object, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, InfoBuilder, OpenApi, OpenApiVersion, Ref, RefOr,
};
use utoipa::{PartialSchema, ToSchema};

use super::error::ErrorBody;

const SCHEME: &str = "bearer";

pub fn finish(mut document: OpenApi) -> OpenApi {
    document.openapi = OpenApiVersion::Version31;
    document.info = InfoBuilder::new()
        .title("Lead Personalisation Service API")
        .version("v1")
        .description(Some(
            "Push leads into a workspace, generate one personalised page per lead, read pages, \
             leads and engagement back. Every endpoint takes `Authorization: Bearer sk-proj-...` \
             and answers JSON, errors included.",
        ))
        .build();

    let components = document.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        SCHEME,
        SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
    );
    components
        .schemas
        .insert(ErrorBody::name().into_owned(), ErrorBody::schema());

    for item in document.paths.paths.values_mut() {
        for operation in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            complete(operation);
        }
    }
    document
}

fn complete(operation: &mut Operation) {
    operation.security = Some(vec![SecurityRequirement::new(SCHEME, Vec::<String>::new())]);
    for response in operation.responses.responses.values_mut() {
        if let RefOr::T(response) = response {
            add_rate_limit_headers(response);
        }
    }
    let shared = [
        (
            "401",
            "Missing, malformed or revoked key (`Unauthenticated.`)",
        ),
        (
            "429",
            "Rate limit exceeded; retry after `Retry-After` seconds",
        ),
        ("500", "Internal error; nothing of its cause is shown"),
    ];
    for (code, description) in shared {
        operation
            .responses
            .responses
            .entry(code.to_owned())
            .or_insert_with(|| {
                let mut response = error_response(description);
                if code == "429" {
                    add_rate_limit_headers(&mut response);
                    response.headers.insert(
                        "Retry-After".into(),
                        integer_header("Seconds to wait").into(),
                    );
                }
                RefOr::T(response)
            });
    }
}

fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(ErrorBody::name())))
                .build(),
        )
        .build()
}

fn add_rate_limit_headers(response: &mut Response) {
    response.headers.insert(
        "X-RateLimit-Limit".into(),
        integer_header("Requests allowed per minute to this key").into(),
    );
    response.headers.insert(
        "X-RateLimit-Remaining".into(),
        integer_header("Requests left in the current window").into(),
    );
}

fn integer_header(description: &str) -> utoipa::openapi::Header {
    HeaderBuilder::new()
        .schema(Some(Object::with_type(Type::Integer)))
        .description(Some(description))
        .build()
}
