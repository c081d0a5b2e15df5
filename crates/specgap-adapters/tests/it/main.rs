mod install;
