// placeholder
window.__reportReady = true;
