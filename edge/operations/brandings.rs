//! `GET /brandings/get-list`; `POST /brandings/create` and `POST /brandings/update`
//! (extensions).

use lps::proto;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Input, Lenient};
use super::workspaces::WorkspaceQuery;

#[derive(Serialize, ToSchema)]
pub struct BrandingBody {
    pub branding_id: i64,
    pub name: String,
    pub is_default: bool,
    /// Beyond the specification, as are the fields below: what pages show of the sender
    /// (`{{ branding.company_name }}` in designs). Null when not set; set with
    /// `POST /brandings/update`, the dashboard or `lps admin branding update`.
    pub company_name: Option<String>,
    /// `{{ branding.logo_url }}`.
    pub logo_url: Option<String>,
    /// `{{ branding.primary_color }}`, a hex colour.
    pub primary_color: Option<String>,
    /// `{{ branding.website }}`.
    pub website: Option<String>,
    /// `{{ sender.name }}`: the person the pages come from.
    pub sender_name: Option<String>,
    /// `{{ sender.title }}`.
    pub sender_title: Option<String>,
    /// `{{ sender.photo_url }}`.
    pub sender_photo_url: Option<String>,
    /// Why `logo_url` could not be fetched and kept, as of its last try (null when it is kept
    /// or not tried yet): pages show the company's name instead. Creating or updating a
    /// branding tries each image not kept yet before answering; updating again tries again.
    pub logo_error: Option<String>,
    /// The same for `sender_photo_url` (pages show no photo meanwhile).
    pub sender_photo_error: Option<String>,
}

impl From<proto::Branding> for BrandingBody {
    fn from(b: proto::Branding) -> Self {
        Self {
            branding_id: b.branding_id,
            name: b.name,
            is_default: b.is_default,
            company_name: b.company_name,
            logo_url: b.logo_url,
            primary_color: b.primary_color,
            website: b.website,
            sender_name: b.sender_name,
            sender_title: b.sender_title,
            sender_photo_url: b.sender_photo_url,
            logo_error: b.logo_error,
            sender_photo_error: b.sender_photo_error,
        }
    }
}

/// The workspace's brandings, default first.
#[utoipa::path(get, path = "/brandings/get-list", tag = "Campaigns",
    params(WorkspaceQuery),
    responses((status = 200, body = Vec<BrandingBody>),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn get_list(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<Vec<BrandingBody>>, ApiError> {
    let request = proto::ListBrandingsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.campaigns().list_brandings(request).await },
            |r| r.brandings.into_iter().map(BrandingBody::from).collect(),
        )
        .await
}

/// What a branding shows. In an update each field given replaces the value and an empty
/// string removes it; addresses are http(s), the colour is hex (`#0f766e`), texts at most
/// 255 characters.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct LookFields {
    #[schema(value_type = Option<String>, max_length = 255)]
    pub company_name: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub logo_url: Lenient<String>,
    #[schema(value_type = Option<String>, example = "#0f766e")]
    pub primary_color: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub website: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 255)]
    pub sender_name: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 255)]
    pub sender_title: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub sender_photo_url: Lenient<String>,
}

impl LookFields {
    fn read(self, check: &mut super::input::Check) -> proto::BrandingFields {
        proto::BrandingFields {
            company_name: check.field("company_name", self.company_name),
            logo_url: check.field("logo_url", self.logo_url),
            primary_color: check.field("primary_color", self.primary_color),
            website: check.field("website", self.website),
            sender_name: check.field("sender_name", self.sender_name),
            sender_title: check.field("sender_title", self.sender_title),
            sender_photo_url: check.field("sender_photo_url", self.sender_photo_url),
        }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreateBrandingRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = String, max_length = 255)]
    pub name: Lenient<String>,
    /// Makes it the workspace's default (the one new campaigns get).
    #[schema(value_type = Option<bool>)]
    pub is_default: Lenient<bool>,
    #[serde(flatten)]
    pub look: LookFields,
}

/// Extension: a new branding of the workspace (the rules of `lps admin branding create`).
#[utoipa::path(post, path = "/brandings/create", tag = "Campaigns",
    request_body = CreateBrandingRequest,
    responses((status = 200, body = BrandingBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    caller: Caller,
    Input(body, mut check): Input<CreateBrandingRequest>,
) -> Result<Reply<BrandingBody>, ApiError> {
    let request = proto::CreateBrandingRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        name: check.field("name", body.name),
        is_default: check.field("is_default", body.is_default),
        look: Some(body.look.read(&mut check)),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.campaigns().create_branding(request).await },
            BrandingBody::from,
        )
        .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateBrandingRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub branding_id: Lenient<i64>,
    /// A blank name leaves it as it is.
    #[schema(value_type = Option<String>, max_length = 255)]
    pub name: Lenient<String>,
    /// True makes it the workspace's default; false changes nothing.
    #[schema(value_type = Option<bool>)]
    pub is_default: Lenient<bool>,
    #[serde(flatten)]
    pub look: LookFields,
}

/// Extension: changes a branding; pages of its campaigns show the change at once.
#[utoipa::path(post, path = "/brandings/update", tag = "Campaigns",
    request_body = UpdateBrandingRequest,
    responses((status = 200, body = BrandingBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Branding not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    caller: Caller,
    Input(body, mut check): Input<UpdateBrandingRequest>,
) -> Result<Reply<BrandingBody>, ApiError> {
    let request = proto::UpdateBrandingRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        branding_id: check.field("branding_id", body.branding_id),
        name: check.field("name", body.name),
        is_default: check.field("is_default", body.is_default),
        look: Some(body.look.read(&mut check)),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.campaigns().update_branding(request).await },
            BrandingBody::from,
        )
        .await
}
