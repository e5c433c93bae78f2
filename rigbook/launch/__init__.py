"""Launch: plan a recipe on a rig, start its engine under supervision, wait for it, smoke-test it."""
