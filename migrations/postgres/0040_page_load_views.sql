-- A batch of beacons looks up the views of the page loads it continues: the first `view` of
-- each load id. Indexed on the id alone, every beacon a load ever sent was read from the table
-- to find its views (a lookup that grew with each load's beacons and was half of a batch's
-- time); with the kind in the index, only the views are visited, in id order, from the index.
-- Confirming a view (every beacon of its load) uses the same index by its first column.
DROP INDEX page_events_view;
CREATE INDEX page_events_view ON page_events (view_id, kind);
