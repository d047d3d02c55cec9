//! `GET /campaigns/get-list`, `POST /campaigns/create`, `POST /campaigns/update` (extension),
//! `GET /campaigns/analytics`, `GET /campaigns/analytics/daily`.

use lps::proto;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Input, Lenient};
use super::workspaces::WorkspaceQuery;

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreateCampaignRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// At most 255 characters; the slug is derived from it.
    #[schema(value_type = String, max_length = 255)]
    pub name: Lenient<String>,
    /// Defaults to the workspace's default branding.
    #[schema(value_type = Option<i64>)]
    pub branding_id: Lenient<i64>,
    /// Kept with the campaign for a later AI design run.
    #[schema(value_type = Option<String>, max_length = 20000)]
    pub prompt: Lenient<String>,
    /// Beyond the specification: where the pages' call to action leads (an http(s) address,
    /// e.g. a calendar link); designs use it as `{{ cta_url }}`. Without it, premade designs
    /// offer a short form instead.
    #[schema(value_type = Option<String>, max_length = 2048)]
    pub cta_url: Lenient<String>,
}

#[derive(Serialize, ToSchema)]
pub struct CampaignBody {
    pub id: i64,
    pub name: String,
    pub slug: String,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedCampaignBody {
    pub campaign_id: i64,
    pub name: String,
    pub slug: String,
    /// The campaign has no design yet: what to do next.
    pub note: String,
}

/// The workspace's campaigns.
#[utoipa::path(get, path = "/campaigns/get-list", tag = "Campaigns",
    params(WorkspaceQuery),
    responses((status = 200, body = Vec<CampaignBody>),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn get_list(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<Vec<CampaignBody>>, ApiError> {
    let request = proto::ListCampaignsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.campaigns().list_campaigns(request).await },
            |r| {
                r.campaigns
                    .into_iter()
                    .map(|proto::Campaign { id, name, slug, .. }| CampaignBody { id, name, slug })
                    .collect()
            },
        )
        .await
}

/// Creates an empty campaign with no design.
#[utoipa::path(post, path = "/campaigns/create", tag = "Campaigns",
    request_body = CreateCampaignRequest,
    responses((status = 200, body = CreatedCampaignBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Branding not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    caller: Caller,
    Input(body, mut check): Input<CreateCampaignRequest>,
) -> Result<Reply<CreatedCampaignBody>, ApiError> {
    let request = proto::CreateCampaignRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        name: check.field("name", body.name),
        branding_id: check.field("branding_id", body.branding_id),
        prompt: check.field("prompt", body.prompt),
        cta_url: check.field("cta_url", body.cta_url),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.campaigns().create_campaign(request).await },
            |r| CreatedCampaignBody {
                campaign_id: r.campaign_id,
                name: r.name,
                slug: r.slug,
                note: r.note,
            },
        )
        .await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnalyticsQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// Default: every campaign of the workspace. `campaign_ids[]=1&campaign_ids[]=2`,
    /// `campaign_ids=1&campaign_ids=2` or `campaign_ids=1,2`.
    #[param(value_type = Option<Vec<i64>>)]
    pub campaign_ids: Lenient<Vec<i64>>,
}

#[derive(Serialize, ToSchema)]
pub struct AnalyticsBody {
    pub campaigns: Vec<AnalyticsEntryBody>,
}

/// One campaign's reach and engagement, from counted visits only: a view counts when the
/// page's tracking script saw a person (an interaction, or the page visible for 3 seconds) in
/// a browser that is not automation, from a network that is not a listed scanner's (never a
/// plain fetch, an unfurler, a prerendered or background tab).
#[derive(Serialize, ToSchema)]
pub struct AnalyticsEntryBody {
    pub campaign_id: i64,
    pub name: String,
    /// Pages with a counted view / pages generated x 100, two decimals; 0 with no pages.
    pub visit_percentage: f64,
    /// Unique visitors who clicked a link or button / unique visitors x 100, two decimals;
    /// 0 with no visitors.
    pub click_percentage: f64,
    /// Mean visible seconds per counted view, rounded; 0 with no views.
    pub average_time_on_page_seconds: i64,
    /// Pages (leads of the campaign) with at least one counted view.
    pub pages_visited: i64,
    pub unique_visitors: i64,
    /// Clicks on links and buttons of the campaign's pages.
    pub total_button_clicks: i64,
    /// Extension: views recorded but not counted, by class (every decision is kept and can be
    /// inspected on the lead's `/leads/activity`).
    pub filtered_visits: FilteredVisitsBody,
}

/// Extension: views recorded but not counted, by class.
#[derive(Serialize, ToSchema)]
pub struct FilteredVisitsBody {
    /// Shown, without evidence of a person yet (no interaction, under 3 seconds visible): what
    /// a mail scanner's real browser that opens a link and leaves looks like.
    pub unconfirmed: i64,
    /// A webdriver, a headless or bot browser, a scanner's user agent, or past a budget.
    pub automated: i64,
    /// From a network listed in `--scanner-networks`.
    pub scanner_network: i64,
}

impl FilteredVisitsBody {
    /// The documented fields from core's counts by class. A class added to `lps.v1.VisitClass`
    /// does not compile here until it has its field (or is counted, as a person's visit is).
    fn of(counts: &[proto::VisitCount]) -> Self {
        let mut body = Self {
            unconfirmed: 0,
            automated: 0,
            scanner_network: 0,
        };
        for entry in counts {
            let field = match proto::VisitClass::try_from(entry.class) {
                Ok(proto::VisitClass::Unconfirmed) => &mut body.unconfirmed,
                Ok(proto::VisitClass::Automated) => &mut body.automated,
                Ok(proto::VisitClass::ScannerNetwork) => &mut body.scanner_network,
                // Counted, so not a filtered visit; or a class from a newer core.
                Ok(proto::VisitClass::Person | proto::VisitClass::Unspecified) | Err(_) => continue,
            };
            *field += entry.count;
        }
        body
    }
}

/// Reach and engagement per campaign.
#[utoipa::path(get, path = "/campaigns/analytics", tag = "Campaigns",
    params(AnalyticsQuery),
    responses((status = 200, body = AnalyticsBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn analytics(
    caller: Caller,
    Input(query, mut check): Input<AnalyticsQuery>,
) -> Result<Reply<AnalyticsBody>, ApiError> {
    let request = proto::GetCampaignAnalyticsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        campaign_ids: check
            .field("campaign_ids", query.campaign_ids)
            .unwrap_or_default(),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.engagement().get_campaign_analytics(request).await },
            |r| AnalyticsBody {
                campaigns: r
                    .campaigns
                    .into_iter()
                    .map(|c| AnalyticsEntryBody {
                        campaign_id: c.campaign_id,
                        name: c.name,
                        visit_percentage: c.visit_percentage,
                        click_percentage: c.click_percentage,
                        average_time_on_page_seconds: c.average_time_on_page_seconds,
                        pages_visited: c.pages_visited,
                        unique_visitors: c.unique_visitors,
                        total_button_clicks: c.total_button_clicks,
                        filtered_visits: FilteredVisitsBody::of(&c.filtered_visits),
                    })
                    .collect(),
            },
        )
        .await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DailyQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[param(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// First day, `YYYY-MM-DD` (default: 29 days before `to`).
    #[param(value_type = Option<String>, format = Date)]
    pub from: Lenient<String>,
    /// Last day, `YYYY-MM-DD` (default: today). At most 366 days are answered (the last ones
    /// of a longer range); a range that ends before it starts has none.
    #[param(value_type = Option<String>, format = Date)]
    pub to: Lenient<String>,
    /// The time zone days are counted in, as minutes east of UTC (-840 to 840, default 0).
    #[param(value_type = Option<i64>, minimum = -840, maximum = 840, default = 0)]
    pub utc_offset_minutes: Lenient<i64>,
    /// Extension: or an IANA time zone (`Europe/Berlin`), its daylight saving time followed:
    /// days are local calendar days there. Not with `utc_offset_minutes`; an unknown name is
    /// a 422 naming `time_zone`.
    #[param(value_type = Option<String>, max_length = 64, example = "Europe/Berlin")]
    pub time_zone: Lenient<String>,
}

#[derive(Serialize, ToSchema)]
pub struct DayBody {
    /// `YYYY-MM-DD`.
    #[schema(example = "2026-11-23")]
    pub date: String,
    pub views: i64,
    pub unique_visitors: i64,
    pub clicks: i64,
    pub form_submissions: i64,
}

#[derive(Serialize, ToSchema)]
pub struct DailyBody {
    pub campaign_id: i64,
    /// Every day of the range, oldest first; days with nothing are zeros.
    pub days: Vec<DayBody>,
}

/// Extension: a campaign's counted engagement per day (views, unique visitors, clicks, form
/// submissions; bots never), every day of the range listed.
#[utoipa::path(get, path = "/campaigns/analytics/daily", tag = "Campaigns", params(DailyQuery),
    responses((status = 200, body = DailyBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn analytics_daily(
    caller: Caller,
    Input(query, mut check): Input<DailyQuery>,
) -> Result<Reply<DailyBody>, ApiError> {
    let request = proto::GetDailyAnalyticsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        campaign_id: check.field("campaign_id", query.campaign_id),
        from: check.field("from", query.from),
        to: check.field("to", query.to),
        utc_offset_minutes: check.field("utc_offset_minutes", query.utc_offset_minutes),
        time_zone: check.field("time_zone", query.time_zone),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.engagement().get_daily_analytics(request).await },
            |r| DailyBody {
                campaign_id: r.campaign_id,
                days: r
                    .days
                    .into_iter()
                    .map(|day| DayBody {
                        date: day.date,
                        views: day.views,
                        unique_visitors: day.unique_visitors,
                        clicks: day.clicks,
                        form_submissions: day.form_submissions,
                    })
                    .collect(),
            },
        )
        .await
}

/// A campaign's words, read by designs as `{{ copy.headline }}` and so on; each text may name
/// the lead's variables (`Hi {{ first_name | default("there") }}`). In an update each field
/// given replaces it and an empty one goes back to the neutral default; in an answer, only what
/// was written.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct CopyBody {
    /// Also the link-preview card's last line: with each value it names at its longest (10,000
    /// characters) it may come to at most 50,000 characters, so it may name four values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub headline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Line breaks allowed.
    #[schema(
        max_length = 1000,
        pattern = r"^[^\u0000-\u0009\u000B-\u001F\u007F-\u009F]*$"
    )]
    pub intro: Option<String>,
    /// At most 6 points of 200 characters; an empty list goes back to the default ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 6)]
    pub points: Option<Vec<String>>,
    /// The call to action's words (a button).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 60)]
    pub cta_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Line breaks allowed.
    #[schema(
        max_length = 200,
        pattern = r"^[^\u0000-\u0009\u000B-\u001F\u007F-\u009F]*$"
    )]
    pub signoff: Option<String>,
    /// Events: when (designs leave the line out without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub event_when: Option<String>,
    /// Events: where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub event_where: Option<String>,
}

impl From<proto::CampaignCopy> for CopyBody {
    fn from(c: proto::CampaignCopy) -> Self {
        Self {
            headline: c.headline,
            intro: c.intro,
            points: c.points.map(|p| p.items),
            cta_label: c.cta_label,
            signoff: c.signoff,
            event_when: c.event_when,
            event_where: c.event_where,
        }
    }
}

impl From<CopyBody> for proto::CampaignCopy {
    fn from(c: CopyBody) -> Self {
        Self {
            headline: c.headline,
            intro: c.intro,
            points: c.points.map(|items| proto::CopyPoints { items }),
            cta_label: c.cta_label,
            signoff: c.signoff,
            event_when: c.event_when,
            event_where: c.event_where,
        }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateCampaignRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// A new call-to-action address (http or https); an empty string removes it.
    #[schema(value_type = Option<String>, max_length = 2048)]
    pub cta_url: Lenient<String>,
    /// Another branding of the workspace.
    #[schema(value_type = Option<i64>)]
    pub branding_id: Lenient<i64>,
    /// The draft's words (visitors see them once the campaign is published).
    #[schema(value_type = Option<CopyBody>)]
    pub copy: Lenient<serde_json::Map<String, serde_json::Value>>,
    /// The public path segment of its pages (`/p/{page_slug}/...`): lower-case letters, digits
    /// and single hyphens, unique in the workspace. Pages move at once; earlier addresses
    /// redirect (301).
    #[schema(value_type = Option<String>, max_length = 60, pattern = "^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub page_slug: Lenient<String>,
    /// A new name (a blank one leaves it as it is); the `slug` and the pages' addresses stay
    /// as they are.
    #[schema(value_type = Option<String>, max_length = 255)]
    pub name: Lenient<String>,
    /// Extension: the workspace's own domain (`/domains/get-list`) its pages are handed out
    /// on, as `https://{hostname}/{page_slug}/{lead_slug}`, once that domain is verified
    /// (until then, and with 0, this server's public URL).
    #[schema(value_type = Option<i64>)]
    pub domain_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct CampaignSettingsBody {
    pub campaign_id: i64,
    pub name: String,
    pub slug: String,
    pub branding_id: i64,
    pub cta_url: Option<String>,
    /// The draft's words as written.
    pub copy: CopyBody,
    /// Where its pages are (`slug` until changed).
    pub page_slug: String,
    /// Extension: the workspace domain its pages are handed out on, if one is chosen.
    pub domain_id: Option<i64>,
}

/// Extension: renames the campaign, changes where its call to action leads or its branding
/// (pages show it at once), or the draft's words (visitors see them once published, like a design change).
#[utoipa::path(post, path = "/campaigns/update", tag = "Campaigns",
    request_body = UpdateCampaignRequest,
    responses((status = 200, body = CampaignSettingsBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found, or Branding not found"),
        (status = 409, body = ErrorBody, description = "Another campaign has its pages at this page_slug"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    caller: Caller,
    Input(body, mut check): Input<UpdateCampaignRequest>,
) -> Result<Reply<CampaignSettingsBody>, ApiError> {
    let copy = check.field("copy", body.copy).and_then(|map| {
        match serde_json::from_value::<CopyBody>(serde_json::Value::Object(map)) {
            Ok(copy) => Some(proto::CampaignCopy::from(copy)),
            Err(_) => {
                check.violation(lps::wire::FieldViolation::must_be(
                    "copy",
                    "an object of texts (headline, intro, cta_label, signoff, event_when, event_where) and a points list",
                ));
                None
            }
        }
    });
    let request = proto::UpdateCampaignRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
        cta_url: check.field("cta_url", body.cta_url),
        branding_id: check.field("branding_id", body.branding_id),
        copy,
        page_slug: check.field("page_slug", body.page_slug),
        name: check.field("name", body.name),
        domain_id: check.field("domain_id", body.domain_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.campaigns().update_campaign(request).await },
            |r| CampaignSettingsBody {
                campaign_id: r.campaign_id,
                name: r.name,
                slug: r.slug,
                branding_id: r.branding_id,
                cta_url: r.cta_url,
                copy: r.copy.map(CopyBody::from).unwrap_or_default(),
                page_slug: r.page_slug,
                domain_id: r.domain_id,
            },
        )
        .await
}
