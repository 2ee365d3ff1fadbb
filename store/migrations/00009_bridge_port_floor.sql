-- +goose Up
-- Every port of the range [first_port, floor) is taken: the search for the
-- first free bridge port starts at floor, so a create does not read every
-- service. An allocation raises it past the port it took; a delete lowers
-- it to the port it frees. Made by the first allocation.
CREATE TABLE bridge_port_floor (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    first_port INTEGER NOT NULL,
    floor      INTEGER NOT NULL
);

-- +goose Down
DROP TABLE bridge_port_floor;
