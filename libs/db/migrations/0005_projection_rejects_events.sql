-- A projector parks single events, not only whole messages: the event's index in its message
-- (-1 for a message that could not be decoded at all) is part of the key.
ALTER TABLE projection_rejects ADD COLUMN event_index integer NOT NULL DEFAULT -1;
ALTER TABLE projection_rejects DROP CONSTRAINT projection_rejects_pkey;
ALTER TABLE projection_rejects ADD PRIMARY KEY (projector, sequence, event_index);
