-- Each index of beacons holds only the rows it is read for, so a beacon nobody looks up that
-- way costs no random index page when it is stored (most of a stored beacon's cost: each
-- lands on a random page of each such index, which the batch's commit writes whole).
--
-- Page loads: a batch looks up the view of each load lps served that it continues, and a
-- confirmation updates that load's beacons; a beacon whose load lps never served is kept
-- without its made-up id (classify.rs), so it is not indexed as a load.
DROP INDEX page_events_view;
CREATE INDEX page_events_view ON page_events (view_id, kind) WHERE view_id IS NOT NULL;
-- A campaign's visitors: read for a person's beacons only (`is_bot = 0`: erasure's "does this
-- visitor remain", the daily analytics); automation's, scanners' and unconfirmed beacons
-- (most of what strangers send) are not indexed. A view confirmed later enters it then.
DROP INDEX page_events_campaign_visitor;
CREATE INDEX page_events_campaign_visitor ON page_events (campaign_id, visitor) WHERE is_bot = 0;
