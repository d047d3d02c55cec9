//! The API's operations, each described once: its handler (`#[utoipa::path]` gives the
//! method, path, input and answers), reading its input, calling core and shaping the reply.
//! [`table`] lists every one; from that one list come the REST routes and the OpenAPI
//! document (`rest/`) and the MCP tools (`mcp/`), which call the same handler with the tool's
//! arguments: the same validation, core call, body and errors, without an HTTP round trip.
//!
//! One file per path group of the specification; `input.rs` reads fields leniently,
//! `caller.rs` forwards the caller to core and shapes replies, `error.rs` maps core's status.

mod account;
mod api_tokens;
mod audiences;
mod automation;
mod brandings;
mod callbacks;
pub mod caller;
mod campaigns;
mod csv_import;
mod enrichment;
pub mod error;
pub mod headers;
mod identity;
pub mod input;
mod lead_lists;
mod leads;
mod openapi;
mod pages;
mod templates;
mod workspaces;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use crate::core_client::Core;
use caller::{Caller, Reply};
use error::ApiError;
use input::{Check, Input};

/// `POST /leads/import-csv`'s path: its body is a streamed file, never buffered whole.
pub const CSV_IMPORT_PATH: &str = "/leads/import-csv";

/// Where the API lives over HTTP.
pub const BASE_PATH: &str = "/api/external/v1";

/// The largest input an operation accepts (bulk lead upserts are the big ones); beyond it,
/// 413. Messages between edge and core may be as large ([`lps::grpc::MAX_MESSAGE_BYTES`]).
pub const BODY_LIMIT_BYTES: usize = 16 * 1024 * 1024;
const _: () = assert!(BODY_LIMIT_BYTES <= lps::grpc::MAX_MESSAGE_BYTES);

/// Every operation, in the specification's order of path groups. `answers` are operations
/// that answer once with a JSON body (REST and MCP); `answers_as` answer REST otherwise (an
/// HTML document) and MCP with the JSON of a second handler doing the same work; `rest_only`
/// answer with a stream of events (a tool answers once, and the polling operation is the
/// tool) or a streamed file (its rows are `/leads/search`'s tool's, a page at a time).
pub fn table() -> Api {
    let mut table = Table::default();
    macro_rules! answers {
        ($($handler:path),* $(,)?) => { $( table.add(routes!($handler), Some(runnable($handler))); )* };
    }
    macro_rules! answers_as {
        ($($handler:path => $run:path),* $(,)?) => { $( table.add(routes!($handler), Some(runnable($run))); )* };
    }
    macro_rules! rest_only {
        ($($handler:path),* $(,)?) => { $( table.add(routes!($handler), None); )* };
    }
    answers![account::credits];
    answers![
        audiences::get_list,
        audiences::create,
        audiences::add_leads,
        audiences::remove_leads,
        audiences::link_to_campaign,
        audiences::unlink_from_campaign,
        audiences::delete,
    ];
    answers![identity::hello_world, identity::hello_world_user];
    answers![
        api_tokens::generate_api_token,
        api_tokens::get_api_tokens,
        api_tokens::delete_api_token,
    ];
    answers![
        campaigns::get_list,
        campaigns::create,
        campaigns::update,
        campaigns::analytics,
        campaigns::analytics_daily,
    ];
    answers![brandings::get_list, brandings::create, brandings::update];
    answers![
        leads::upsert_leads,
        leads::upsert_lead,
        leads::import_to_workspace,
        leads::get_status,
        leads::get_leads,
        lead_lists::search,
        leads::get,
        leads::activity,
        leads::engaged,
        leads::export,
        leads::delete,
    ];
    rest_only![
        leads::get_status_stream,
        lead_lists::export_csv,
        csv_import::import_csv
    ];
    answers![enrichment::enrich];
    answers![
        pages::design,
        pages::update_design,
        pages::generate,
        pages::generate_status,
        pages::generate_cancel,
        pages::publish,
        pages::unpublish,
    ];
    rest_only![pages::generate_status_stream];
    answers_as![pages::preview => pages::preview_document];
    answers![templates::get_list, templates::apply, templates::create];
    answers![workspaces::get_list, workspaces::get_variable_list];
    answers![
        callbacks::deliveries,
        callbacks::redeliver,
        callbacks::endpoints,
        callbacks::rotate_secret,
    ];
    answers![
        automation::test,
        automation::upsert_lead,
        automation::upsert_lead_basic,
        automation::get_leads,
        automation::get_leads_from_job,
        automation::get_form_submissions,
    ];
    table.finish()
}

/// What the table gives the faces.
pub struct Api {
    /// Every operation as an HTTP route under [`BASE_PATH`] (REST).
    pub routes: Router<Core>,
    /// The OpenAPI document of those routes (served by REST; MCP's tool descriptions).
    pub document: Value,
    /// Every operation that answers once, by operation id, run from arguments (MCP).
    pub runs: HashMap<String, Run>,
}

/// An operation run from its arguments: the documented JSON body, or the failure.
pub type Run = Arc<dyn Fn(Caller, Map<String, Value>) -> Answer + Send + Sync>;
/// What a [`Run`] answers.
pub type Answer = Pin<Box<dyn Future<Output = Result<Value, ApiError>> + Send>>;

#[derive(Default)]
struct Table {
    routes: OpenApiRouter<Core>,
    runs: HashMap<String, Run>,
}

impl Table {
    fn add(&mut self, route: UtoipaMethodRouter<Core>, run: Option<Run>) {
        let (schemas, mut paths, method_router) = route;
        if let Some(run) = run {
            for path in paths.paths.keys() {
                self.runs.insert(openapi::operation_id(path), run.clone());
            }
        }
        // Routed at their whole path rather than nested under BASE_PATH: a nested router
        // rewrites every request's URI to strip the prefix (an allocation and a copy per call).
        paths.paths = std::mem::take(&mut paths.paths)
            .into_iter()
            .map(|(path, item)| (format!("{BASE_PATH}{path}"), item))
            .collect();
        self.routes = std::mem::take(&mut self.routes).routes((schemas, paths, method_router));
    }

    fn finish(self) -> Api {
        let (routes, document) = self.routes.split_for_parts();
        Api {
            routes,
            document: openapi::document_json(document),
            runs: self.runs,
        }
    }
}

/// A handler as a [`Run`]: `fn(Caller)` or `fn(Caller, Input<T>)`, answering a [`Reply`].
fn runnable<H: Handler<Args>, Args>(handler: H) -> Run {
    Arc::new(move |caller, fields| handler.clone().run(caller, fields))
}

/// The two shapes an operation's handler has.
trait Handler<Args>: Clone + Send + Sync + 'static {
    fn run(self, caller: Caller, fields: Map<String, Value>) -> Answer;
}

impl<F, Fut, T> Handler<()> for F
where
    F: FnOnce(Caller) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<T>, ApiError>> + Send + 'static,
    T: Serialize,
{
    fn run(self, caller: Caller, _fields: Map<String, Value>) -> Answer {
        Box::pin(async move { self(caller).await.map(Reply::into_json) })
    }
}

impl<F, Fut, I, T> Handler<(I,)> for F
where
    F: FnOnce(Caller, Input<I>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<T>, ApiError>> + Send + 'static,
    I: DeserializeOwned + Default + Send + 'static,
    T: Serialize,
{
    fn run(self, caller: Caller, fields: Map<String, Value>) -> Answer {
        let input = Input::read(fields, Check::default());
        Box::pin(async move { self(caller, input).await.map(Reply::into_json) })
    }
}
