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
pub mod bulk;
mod callbacks;
pub mod caller;
mod campaigns;
mod csv_import;
pub mod domains;
pub mod effect;
mod enrichment;
pub mod error;
pub mod headers;
mod identity;
pub mod input;
mod lead_lists;
mod leads;
mod notifications;
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
use effect::{ADDS, Effect, OVERWRITES, READS, REPLACES, SETS};
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

/// Every operation, in the specification's order of path groups, each with its [`Effect`].
/// `answers` are operations that answer once with a JSON body (REST and MCP); `answers_as`
/// answer REST otherwise (an HTML document) and MCP with the JSON of a second handler doing
/// the same work, whose body type is named; `rest_only` answer with a stream of events (a
/// tool answers once, and the polling operation is the tool) or a streamed file (its rows are
/// `/leads/search`'s tool's, a page at a time).
pub fn table() -> Api {
    let mut table = Table::default();
    macro_rules! answers {
        ($($handler:path => $effect:expr),* $(,)?) => {
            $( table.add(routes!($handler), Some(Tool::new(runnable($handler), $effect))); )*
        };
    }
    macro_rules! answers_as {
        ($($handler:path => $run:path as $body:ty => $effect:expr),* $(,)?) => {
            $( table.add(
                routes!($handler),
                Some(Tool::new(runnable($run), $effect).answering::<$body>()),
            ); )*
        };
    }
    macro_rules! rest_only {
        ($($handler:path),* $(,)?) => { $( table.add(routes!($handler), None); )* };
    }
    answers![account::credits => READS];
    answers![
        audiences::get_list => READS,
        audiences::create => ADDS,
        audiences::add_leads => SETS,
        audiences::remove_leads => OVERWRITES,
        audiences::link_to_campaign => SETS,
        audiences::unlink_from_campaign => OVERWRITES,
        audiences::delete => OVERWRITES,
    ];
    answers![identity::hello_world => READS, identity::hello_world_user => READS];
    answers![
        api_tokens::generate_api_token => ADDS,
        api_tokens::get_api_tokens => READS,
        api_tokens::delete_api_token => OVERWRITES,
    ];
    answers![
        campaigns::get_list => READS,
        // A campaign's branding logo is fetched from where its address says.
        campaigns::create => ADDS.reaching_outside(),
        campaigns::update => OVERWRITES,
        campaigns::analytics => READS,
        campaigns::analytics_daily => READS,
    ];
    answers![
        brandings::get_list => READS,
        brandings::create => ADDS,
        brandings::update => OVERWRITES,
    ];
    // Writing leads may send their callbacks and start their enrichment.
    answers![
        leads::upserts::upsert_leads => OVERWRITES.reaching_outside(),
        leads::upserts::upsert_lead => OVERWRITES.reaching_outside(),
        leads::upserts::import_to_workspace => ADDS.reaching_outside(),
        leads::jobs::get_status => READS,
        leads::jobs::get_leads => READS,
        lead_lists::search => READS,
        leads::lead::get => READS,
        leads::activity::activity => READS,
        leads::activity::engaged => READS,
        leads::privacy::export => READS,
        leads::privacy::delete => OVERWRITES,
    ];
    rest_only![
        leads::jobs::get_status_stream,
        lead_lists::export_csv,
        csv_import::import_csv,
        csv_import::export_rejected_csv,
    ];
    answers![enrichment::enrich => ADDS.reaching_outside()];
    answers![
        pages::design => READS,
        pages::update_design => OVERWRITES,
        pages::generate => ADDS.reaching_outside(),
        pages::generate_status => READS,
        pages::generate_cancel => OVERWRITES,
        pages::publish => SETS,
        pages::unpublish => OVERWRITES,
    ];
    rest_only![pages::generate_status_stream];
    answers_as![pages::preview => pages::preview_document as pages::PreviewBody => READS];
    answers![
        templates::get_list => READS,
        templates::apply => OVERWRITES,
        templates::create => ADDS,
    ];
    answers![
        workspaces::get_list => READS,
        workspaces::get_variable_list => READS,
        workspaces::get_settings => READS,
        workspaces::update_settings => OVERWRITES,
    ];
    answers![
        callbacks::deliveries => READS,
        callbacks::redeliver => ADDS.reaching_outside(),
        callbacks::endpoints => READS,
        callbacks::rotate_secret => REPLACES,
    ];
    // A channel's address is where its messages are sent; a test sends one now.
    answers![
        notifications::create => ADDS.reaching_outside(),
        notifications::get_list => READS,
        notifications::update => OVERWRITES.reaching_outside(),
        notifications::delete => OVERWRITES,
        notifications::test => ADDS.reaching_outside(),
    ];
    // Verifying looks up the domain's DNS records.
    answers![
        domains::create => ADDS,
        domains::verify => SETS.reaching_outside(),
        domains::get_list => READS,
        domains::delete => OVERWRITES,
    ];
    answers![
        automation::test => READS,
        automation::upsert_lead => REPLACES.reaching_outside(),
        automation::upsert_lead_basic => REPLACES.reaching_outside(),
        automation::get_leads => READS,
        automation::get_leads_from_job => READS,
        automation::get_form_submissions => READS,
    ];
    table.finish()
}

/// What the table gives the faces.
pub struct Api {
    /// Every operation as an HTTP route under [`BASE_PATH`] (REST).
    pub routes: Router<Core>,
    /// The OpenAPI document of those routes (served by REST; MCP's tool descriptions).
    pub document: Value,
    /// Every operation that answers once, by operation id (MCP's tools).
    pub tools: HashMap<String, Tool>,
}

/// An operation as MCP offers it: run from arguments, with what it does.
#[derive(Clone)]
pub struct Tool {
    pub run: Run,
    pub effect: Effect,
    /// The JSON Schema of its answer, for one whose REST answer is not that JSON
    /// (`answers_as`); others' come from their OpenAPI success body.
    pub answer_schema: Option<Value>,
}

impl Tool {
    fn new(run: Run, effect: Effect) -> Self {
        Self {
            run,
            effect,
            answer_schema: None,
        }
    }

    fn answering<T: utoipa::PartialSchema>(mut self) -> Self {
        self.answer_schema = serde_json::to_value(T::schema()).ok();
        self
    }
}

/// An operation run from its arguments: the documented JSON body, or the failure.
pub type Run = Arc<dyn Fn(Caller, Map<String, Value>) -> Answer + Send + Sync>;
/// What a [`Run`] answers.
pub type Answer = Pin<Box<dyn Future<Output = Result<Value, ApiError>> + Send>>;

#[derive(Default)]
struct Table {
    routes: OpenApiRouter<Core>,
    tools: HashMap<String, Tool>,
}

impl Table {
    fn add(&mut self, route: UtoipaMethodRouter<Core>, tool: Option<Tool>) {
        let (schemas, mut paths, method_router) = route;
        if let Some(tool) = tool {
            for (path, item) in &paths.paths {
                // Only a GET reads only: an effect that says otherwise is a mistake in the table.
                assert_eq!(
                    item.get.is_some(),
                    tool.effect.read_only(),
                    "{path}: a GET is READS, and only a GET"
                );
                self.tools.insert(openapi::operation_id(path), tool.clone());
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
            tools: self.tools,
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
