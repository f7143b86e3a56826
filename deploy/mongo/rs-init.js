// Initiates the replica set rs0 once (a second run finds it initiated),
// then waits for a primary, so the services that depend on this one-shot
// job start against a writable store.
try {
  rs.status();
  print("replica set rs0 already initiated");
} catch (e) {
  if (e.codeName !== "NotYetInitialized") throw e;
  rs.initiate({
    _id: "rs0",
    members: [
      { _id: 0, host: "mongo-1:27017" },
      { _id: 1, host: "mongo-2:27017" },
      { _id: 2, host: "mongo-3:27017" },
    ],
  });
}
for (let i = 0; i < 240 && !db.hello().primary; i++) sleep(500);
if (!db.hello().primary) {
  print("no primary after 2 minutes");
  quit(1);
}
print("replica set rs0 primary: " + db.hello().primary);
