//! `lps.v1.EngagementService`: what visitors did on lead pages, read back.

use std::pin::Pin;

use tokio::sync::{broadcast, mpsc};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::engagement::{self, Activity, CampaignAnalytics};
use crate::domain::engagement_feed::FeedEvent;
use crate::domain::visit_class::VisitClass;
use crate::domain::{campaigns, form_submissions};
use crate::error::FieldViolation;
use crate::local_days::LocalDays;
use crate::proto::{self, engagement_service_server};
use crate::services::visit_classes;
use crate::store::form_submissions::SubmissionRow;
use crate::time;
use crate::validate::{self, EarlierViolations, Validated, limit, required};

type EngagementStream = Pin<Box<dyn Stream<Item = Result<proto::EngagementEvent, Status>> + Send>>;

pub struct EngagementService {
    app: App,
}

impl EngagementService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl engagement_service_server::EngagementService for EngagementService {
    async fn list_form_submissions(
        &self,
        request: Request<proto::ListFormSubmissionsRequest>,
    ) -> Result<Response<proto::ListFormSubmissionsResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::ListFormSubmissionsRequest {
            workspace_id,
            campaign_id,
            limit: page_size,
            before_id,
        } = request.into_inner();
        let (page_size,) = (limit("limit", page_size, 1, 100, 50),).validated(&earlier)?;
        let rows = form_submissions::list(
            &self.app,
            principal,
            workspace_id,
            campaign_id,
            before_id,
            page_size,
        )
        .await?;
        Ok(Response::new(proto::ListFormSubmissionsResponse {
            submissions: rows
                .into_iter()
                .map(submission)
                .collect::<crate::Result<_>>()?,
        }))
    }

    async fn get_campaign_analytics(
        &self,
        request: Request<proto::GetCampaignAnalyticsRequest>,
    ) -> Result<Response<proto::GetCampaignAnalyticsResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::GetCampaignAnalyticsRequest {
            workspace_id,
            campaign_ids,
        } = request.into_inner();
        let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&earlier)?;
        let entries =
            engagement::campaign_analytics(&self.app, principal, workspace_id, &campaign_ids)
                .await?;
        Ok(Response::new(proto::GetCampaignAnalyticsResponse {
            campaigns: entries.into_iter().map(analytics).collect(),
        }))
    }

    async fn list_lead_activity(
        &self,
        request: Request<proto::ListLeadActivityRequest>,
    ) -> Result<Response<proto::ListLeadActivityResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListLeadActivityRequest {
            lead_id,
            before,
            limit: page_size,
        } = request.get_ref();
        let (lead_id, page_size) = (
            required("lead_id", *lead_id),
            limit("limit", *page_size, 1, 100, 50),
        )
            .validated(&request)?;
        let before = before
            .as_ref()
            .map(|ts| time::from_proto(ts).timestamp_micros());
        let (entries, next_before) =
            engagement::lead_activity(&self.app, principal, lead_id, before, page_size).await?;
        Ok(Response::new(proto::ListLeadActivityResponse {
            entries: entries.into_iter().map(activity).collect(),
            next_before: next_before.map(time::to_proto),
        }))
    }

    async fn list_engaged_leads(
        &self,
        request: Request<proto::ListEngagedLeadsRequest>,
    ) -> Result<Response<proto::ListEngagedLeadsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListEngagedLeadsRequest {
            workspace_id,
            days,
            limit: page_size,
        } = *request.get_ref();
        let (workspace_id, days, page_size) = (
            required("workspace_id", workspace_id),
            limit("days", days, 1, 90, 7),
            limit("limit", page_size, 1, 100, 20),
        )
            .validated(&request)?;
        let rows =
            engagement::engaged_leads(&self.app, principal, workspace_id, days, page_size).await?;
        Ok(Response::new(proto::ListEngagedLeadsResponse {
            leads: rows
                .into_iter()
                .map(|row| {
                    let custom: std::collections::BTreeMap<String, String> =
                        serde_json::from_str(&row.custom_values).unwrap_or_default();
                    proto::EngagedLead {
                        lead_id: row.lead_id,
                        name: crate::domain::lead::display_name(
                            row.first_name.as_deref(),
                            custom.get("last_name").map(String::as_str),
                        ),
                        email: row.email,
                        company_name: row.company_name,
                        campaign_id: row.campaign_id,
                        campaign_name: row.campaign_name,
                        last_activity_at: Some(time::to_proto(row.last_at)),
                        views: row.views,
                        scrolled_to_end: row.scrolled > 0,
                        clicks: row.clicks,
                        form_submissions: row.forms,
                        score: crate::domain::score::at(row.score_base, time::now()),
                    }
                })
                .collect(),
        }))
    }

    async fn get_daily_analytics(
        &self,
        request: Request<proto::GetDailyAnalyticsRequest>,
    ) -> Result<Response<proto::GetDailyAnalyticsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::GetDailyAnalyticsRequest {
            workspace_id,
            campaign_id,
            from,
            to,
            utc_offset_minutes,
            time_zone,
        } = request.get_ref().clone();
        let zone = match (&time_zone, utc_offset_minutes) {
            (Some(_), Some(_)) => Err(FieldViolation::new(
                "time_zone",
                "Give either the time zone field or the utc offset minutes field, not both.",
            )),
            _ => validate::time_zone("time_zone", time_zone),
        };
        let (workspace_id, campaign_id, from, to, offset, zone) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            day("from", from),
            day("to", to),
            limit("utc_offset_minutes", utc_offset_minutes, -840, 840, 0),
            zone,
        )
            .validated(&request)?;
        let local_days = zone.unwrap_or_else(|| LocalDays::offset_minutes(offset));
        let days = engagement::daily_analytics(
            &self.app,
            principal,
            workspace_id,
            campaign_id,
            (from, to),
            &local_days,
        )
        .await?;
        Ok(Response::new(proto::GetDailyAnalyticsResponse {
            campaign_id,
            days: days
                .into_iter()
                .map(|sums| proto::DailyAnalytics {
                    date: date_of(sums.day),
                    views: sums.views,
                    unique_visitors: sums.unique_visitors,
                    clicks: sums.clicks,
                    form_submissions: sums.form_submissions,
                })
                .collect(),
        }))
    }

    type WatchEngagementStream = EngagementStream;

    async fn watch_engagement(
        &self,
        request: Request<proto::WatchEngagementRequest>,
    ) -> Result<Response<Self::WatchEngagementStream>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::WatchEngagementRequest {
            workspace_id,
            campaign_id,
        } = request.into_inner();
        let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&earlier)?;
        let workspace = principal.reach(&self.app.db, workspace_id).await?;
        if let Some(id) = campaign_id {
            campaigns::in_workspace(&self.app.db, principal, workspace.id, id).await?;
        }
        let mut events = self.app.feed.subscribe();
        let (sender, receiver) = mpsc::channel(256);
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    event = events.recv() => event,
                    () = sender.closed() => return,
                };
                let event = match event {
                    Ok(event) => event,
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "an engagement watcher fell behind");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let wanted = event.workspace_id == workspace.id
                    && campaign_id.is_none_or(|id| id == event.campaign_id);
                if wanted && sender.send(Ok(feed_event(&event))).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(
            Box::pin(ReceiverStream::new(receiver)) as Self::WatchEngagementStream
        ))
    }
}

fn analytics(entry: CampaignAnalytics) -> proto::CampaignAnalytics {
    let CampaignAnalytics {
        campaign_id,
        name,
        visit_percentage,
        click_percentage,
        average_time_on_page_seconds,
        pages_visited,
        unique_visitors,
        total_button_clicks,
        pages_generated,
        total_views,
        filtered_visits,
    } = entry;
    proto::CampaignAnalytics {
        campaign_id,
        name,
        visit_percentage,
        click_percentage,
        average_time_on_page_seconds,
        pages_visited,
        unique_visitors,
        total_button_clicks,
        pages_generated,
        total_views,
        filtered_visits: super::visit_classes::counts(&filtered_visits, |class, _| {
            !class.counted()
        }),
    }
}

fn feed_event(event: &FeedEvent) -> proto::EngagementEvent {
    proto::EngagementEvent {
        event: event.event.clone(),
        workspace_id: event.workspace_id,
        campaign_id: event.campaign_id,
        lead_id: event.lead_id,
        occurred_at: Some(time::to_proto(event.occurred_at)),
        seconds: event.seconds,
        target: event.target.clone(),
    }
}

fn submission(row: SubmissionRow) -> crate::Result<proto::FormSubmission> {
    let SubmissionRow {
        id,
        campaign_id,
        lead_id,
        form_id,
        page_url,
        ip_address,
        email,
        fields,
        created_at,
        class,
        reason,
    } = row;
    Ok(proto::FormSubmission {
        id,
        form_id,
        page_url,
        ip_address,
        created_at: Some(time::to_proto(created_at)),
        email,
        lead_id,
        campaign_id,
        fields: serde_json::from_str(&fields).unwrap_or_default(),
        class: visit_classes::to_proto(VisitClass::from_stored(&class)?).into(),
        reason,
    })
}

fn activity(entry: Activity) -> proto::ActivityEntry {
    proto::ActivityEntry {
        event: entry.event.to_owned(),
        occurred_at: Some(time::to_proto(entry.occurred_at)),
        campaign_id: entry.campaign_id,
        campaign_name: entry.campaign_name,
        seconds: entry.seconds,
        target: entry.target,
        form_id: entry.form_id,
        fields: entry.fields.into_iter().collect(),
        class: visit_classes::to_proto(entry.class).into(),
        reason: entry.reason,
    }
}

/// An optional day, `YYYY-MM-DD`, as days since 1970-01-01.
fn day(field: &str, value: Option<String>) -> crate::validate::Field<Option<i64>> {
    let Some(text) = value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    chrono::NaiveDate::parse_from_str(&text, "%Y-%m-%d")
        .map(|date| {
            Some(
                date.signed_duration_since(chrono::NaiveDate::default())
                    .num_days(),
            )
        })
        .map_err(|_| crate::error::FieldViolation::must_be(field, "a date (YYYY-MM-DD)"))
}

/// Days since 1970-01-01 as `YYYY-MM-DD`.
fn date_of(day: i64) -> String {
    (chrono::NaiveDate::default() + chrono::Duration::days(day))
        .format("%Y-%m-%d")
        .to_string()
}
